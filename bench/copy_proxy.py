"""The floor of a proxy hop in Python: asyncio copying bytes both ways between its stdio and a server it starts,
reading none of them. `bench/proxy_overhead.py` runs the same session through it, so the hub's figures can be
read against what any Python process in the middle costs on this machine (two more pipe hops and wake-ups).

    python bench/copy_proxy.py COMMAND [ARGS...]
"""

from __future__ import annotations

import asyncio
import sys


async def main(argv: list[str]) -> None:
    loop = asyncio.get_running_loop()
    server = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE,
                                                  stdout=asyncio.subprocess.PIPE, limit=1 << 26)
    assert server.stdin is not None and server.stdout is not None
    client_in = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(client_in), sys.stdin.buffer)
    client_out, _ = await loop.connect_write_pipe(asyncio.Protocol, sys.stdout.buffer)
    server_in, server_out = server.stdin, server.stdout

    async def upstream() -> None:
        while data := await client_in.read(1 << 20):
            server_in.write(data)
        server_in.close()

    async def downstream() -> None:
        while data := await server_out.read(1 << 20):
            client_out.write(data)

    await asyncio.gather(upstream(), downstream())
    await server.wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))

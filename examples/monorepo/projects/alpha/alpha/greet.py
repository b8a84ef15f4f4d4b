def greeting(name: str) -> str:
    return f"Hello, {name}!"


def shout(name: str) -> str:
    return greeting(name).upper()

"""The first lines an agent reads (issue #27): generated files never ranked on a word alone, a test never above the
module it tests, a vague task answered with the project's central files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_hub.index import api
from lsp_hub.index.file_kinds import is_generated_path, looks_minified
from lsp_hub.index.workspace import WorkspaceIndex
from tests.index.index_helpers import write

MODELS = "class Invoice:\n    def total(self):\n        return 0\n\n\ndef make_invoice():\n    return Invoice()\n"


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "shop"
    write(root, "shop/models.py", MODELS)
    write(root, "shop/billing.py", "from shop.models import Invoice, make_invoice\n\n\ndef bill():\n"
                                   "    return make_invoice().total()\n")
    write(root, "shop/views.py", "from shop.billing import bill\n\n\ndef page():\n    return bill()\n")
    write(root, "shop/cli.py", "from shop.billing import bill\nfrom shop.models import Invoice\n\n\n"
                               "def main():\n    print(bill(), Invoice())\n")
    # A test that uses the names more than anyone, and so outranks its subject on those names.
    write(root, "tests/test_models.py", "from shop.models import Invoice, make_invoice\n\n\n" + "".join(
        f"def test_invoice_{n}():\n    assert make_invoice().total() == Invoice().total()\n\n\n" for n in range(8)))
    yield root


def relevant(root: Path, description: str, targets: tuple[str, ...] = ()) -> dict[str, object]:
    index = WorkspaceIndex(root)
    try:
        index.build()
        return api.relevant_files(index, {"description": description, "targets": [str(root / t) for t in targets],
                                          "historyCommits": 0})
    finally:
        index.close()


def paths(result: dict[str, object]) -> list[str]:
    return [entry["path"] for entry in result["files"]]  # type: ignore[attr-defined, index]


def test_a_bundle_matched_by_a_word_alone_is_not_ranked(project: Path) -> None:
    bundle = "".join(f"function invoice{n}(a){{return a.invoice*{n}}};" for n in range(400))
    write(project, "examples/static/invoice.min.js", bundle)
    write(project, "examples/static/app.js", "function invoice(a){return a}" * 300)  # minified, no .min name
    ranked = paths(relevant(project, "the invoice total is wrong"))
    assert "shop/models.py" in ranked
    assert not any(path.startswith("examples/") for path in ranked), ranked


def test_a_generated_file_linked_by_imports_still_ranks(project: Path) -> None:
    write(project, "shop/generated/invoice_pb2.py", "class InvoiceMessage:\n    pass\n")
    write(project, "shop/models.py", "from shop.generated.invoice_pb2 import InvoiceMessage\n" + MODELS)
    ranked = paths(relevant(project, "change the invoice", ("shop/models.py",)))
    assert "shop/generated/invoice_pb2.py" in ranked, ranked  # imported by the target: a reason beyond words


def test_a_test_never_ranks_above_the_module_it_tests(project: Path) -> None:
    ranked = paths(relevant(project, "make_invoice should round the Invoice total"))
    assert "tests/test_models.py" in ranked and "shop/models.py" in ranked, ranked
    assert ranked.index("shop/models.py") < ranked.index("tests/test_models.py"), ranked


def test_a_module_moved_before_its_test_says_why(project: Path) -> None:
    """Its score stays its own, lower than the test's: the reason tells a reader the order is not a mistake."""
    # The test's function names hold "rounding", and so it outscores its subject on this description.
    write(project, "tests/test_models.py", "from shop.models import Invoice, make_invoice\n\n\n" + "".join(
        f"def test_invoice_rounding_{n}():\n    assert make_invoice().total() == Invoice().total()\n\n\n"
        for n in range(8)))
    files = relevant(project, "rounding of the invoice total in tests")["files"]
    by_path = {entry["path"]: entry for entry in files}  # type: ignore[attr-defined]
    module, test = by_path["shop/models.py"], by_path["tests/test_models.py"]
    assert module["score"] < test["score"], files
    assert any("listed before its test tests/test_models.py" in reason for reason in module["reasons"]), module
    assert module["listedBefore"] == "tests/test_models.py"
    assert not any("listed before" in reason for reason in test["reasons"]), test


def test_a_vague_task_gets_the_central_files(project: Path) -> None:
    result = relevant(project, "fix the bug")
    ranked = paths(result)
    assert result["basis"] == "central"
    assert ranked and ranked[0] in ("shop/models.py", "shop/billing.py"), ranked
    assert "tests/test_models.py" not in ranked
    assert all("most central" in entry["reasons"][0] for entry in result["files"])  # type: ignore[attr-defined]
    assert relevant(project, "the invoice total")["basis"] == "matched"


@pytest.mark.parametrize(("path", "generated"), [
    ("web/dist/app.js", True), ("static/jquery.min.js", True), ("app.js.map", True), ("package-lock.json", True),
    ("api/invoice_pb2.py", True), ("api/invoice.pb.go", True), ("third_party/zlib/inflate.c", True),
    ("src/build/main.py", False), ("shop/models.py", False), ("src/minify.ts", False), ("Cargo.lock", True),
])
def test_generated_paths(path: str, generated: bool) -> None:
    assert is_generated_path(path) is generated


def test_minified_by_line_length() -> None:
    assert looks_minified(12_000, 3) and not looks_minified(12_000, 300) and not looks_minified(900, 1)


def test_a_words_plural_in_a_path_matches_it(project: Path) -> None:
    """fastapi: 'dependency' in a task did not find fastapi/dependencies/ by its path, nor 'websocket' websockets.py:
    a path's words and the description's compare by their singulars, each counted once."""
    write(project, "shop/dependencies/solver.py", "def solve():\n    return 1\n")
    write(project, "shop/websockets.py", "def accept():\n    return 1\n")
    files = relevant(project, "a websocket dependency and its dependencies")["files"]
    reasons = {entry["path"]: entry["reasons"] for entry in files}  # type: ignore[attr-defined, index]
    assert "path matches 'dependencies'" in reasons["shop/dependencies/solver.py"]
    assert "path matches 'websocket'" in reasons["shop/websockets.py"]


def test_a_description_alone_ranks_the_code_before_its_examples(project: Path) -> None:
    """fastapi: hundreds of docs_src files match a task's words as well as the library does. With no target they
    count half; with a target (whose neighbours decide) they are left as they are."""
    for number in range(3):
        write(project, f"docs_src/invoice_{number}.py", "from shop.models import Invoice\n\nInvoice().total()\n")
    ranked = paths(relevant(project, "the invoice total"))
    assert ranked.index("shop/models.py") < min(ranked.index(f"docs_src/invoice_{n}.py") for n in range(3)), ranked


def test_a_name_made_of_the_descriptions_words_in_another_order_is_found(project: Path) -> None:
    """httpx: "follow redirects should strip the Authorization header when the host changes" did not find
    `_client.py`, whose `_redirect_headers` no run of the words spells. A name made of two or more of its words in
    any order (private too, and with a few stop words such as `get`) counts; one of them alone, or one word twice,
    does not."""
    write(project, "shop/client.py", "class Client:\n    def _redirect_headers(self):\n        return {}\n\n"
                                     "    def get_host_header(self):\n        return ''\n")
    write(project, "shop/headers.py", "class HeaderHeader:\n    pass\n\n\ndef headers():\n    return []\n")
    write(project, "shop/hosts.py", "def host_name():\n    return ''\n")
    files = relevant(project, "follow redirects should strip the Authorization header when the host changes")["files"]
    reasons = {entry["path"]: entry["reasons"] for entry in files}  # type: ignore[attr-defined, index]
    assert any("_redirect_headers" in reason and "get_host_header" in reason for reason in reasons["shop/client.py"])
    named = " ".join(reason for file_reasons in reasons.values() for reason in file_reasons if "named in" in reason)
    assert "HeaderHeader" not in named and "host_name" not in named


def test_a_version_or_a_number_in_a_name_made_of_the_words_is_no_other_word(project: Path) -> None:
    """fzf: "fuzzy match scoring bonus for camel case" did not find algo.go, whose `FuzzyMatchV2` and
    `bonusCamel123` are made of its words and a version or a number; a number alone beside one word still is not."""
    write(project, "shop/algo.go", "package algo\n\nconst bonusCamel123 = 2\n\nfunc FuzzyMatchV2() int {\n"
                                   "\treturn bonusCamel123\n}\n")
    write(project, "shop/other.go", "package algo\n\nfunc Fuzzy42() int {\n\treturn 1\n}\n")
    files = relevant(project, "fuzzy match scoring bonus for camel case")["files"]
    reasons = {entry["path"]: entry["reasons"] for entry in files}  # type: ignore[attr-defined, index]
    assert any("FuzzyMatchV2" in reason and "bonusCamel123" in reason for reason in reasons["shop/algo.go"]), reasons
    assert "Fuzzy42" not in " ".join(reason for file_reasons in reasons.values() for reason in file_reasons)


def test_a_rare_word_inside_a_files_names_counts_and_a_common_one_does_not(project: Path) -> None:
    """requests: "redirect should drop the Authorization header when the host changes" named no name of
    sessions.py, which defines `resolve_redirects`, `get_redirect_target` and `SessionRedirectMixin`. A description
    word of five letters or more inside the names of a few files counts for them, more for a file with more such
    names; a word inside the names of more files than both eight and a tenth (`invoice` here), or a stop word
    (`update`), does not, nor a test's callback named in prose (`it("should follow a redirect")`)."""
    write(project, "shop/sessions.py", "class SessionRedirectMixin:\n    def resolve_redirects(self):\n"
                                       "        return get_redirect_target()\n\n\ndef get_redirect_target():\n"
                                       "    return None\n")
    write(project, "shop/status.py", "def is_redirect(code):\n    return code == 302\n")
    write(project, "shop/errors.py", "class TooManyUpdates(Exception):\n    pass\n")
    for number in range(9):
        write(project, f"shop/parts/part_{number}.py", f"def invoice_part_{number}():\n    return {number}\n")
    write(project, "web/flow.test.js", 'it("should follow a redirect", () => {});\n')
    files = relevant(project, "redirect the invoice when the user updates")["files"]
    scores = {entry["path"]: entry["score"] for entry in files}  # type: ignore[attr-defined, index]
    reasons = {entry["path"]: " ".join(entry["reasons"]) for entry in files}  # type: ignore[attr-defined, index]
    assert "with 'redirect' in the name" in reasons["shop/sessions.py"]
    assert scores["shop/sessions.py"] > scores["shop/status.py"] > 0
    assert "'invoice'" not in " ".join(reasons.values()) and "shop/errors.py" not in scores
    assert "should follow a redirect" not in reasons.get("web/flow.test.js", "")  # prose, not a name


def test_a_word_written_in_camel_case_counts_as_written_too(project: Path) -> None:
    """starlette: "GZip middleware should not compress server sent events" split GZip into g and zip, so neither
    gzip.py nor its GZipMiddleware was found by it."""
    write(project, "shop/middleware/gzip.py", "class GZipMiddleware:\n    pass\n")
    write(project, "shop/middleware/cors.py", "class CORSMiddleware:\n    pass\n")
    files = relevant(project, "GZip middleware should not compress server sent events")["files"]
    reasons = {entry["path"]: " ".join(entry["reasons"]) for entry in files}  # type: ignore[attr-defined, index]
    assert "path matches 'gzip'" in reasons["shop/middleware/gzip.py"]
    assert "GZipMiddleware named in the description" in reasons["shop/middleware/gzip.py"]
    assert paths({"files": files})[0] == "shop/middleware/gzip.py"


def test_a_c_librarys_name_prefix_need_not_be_in_the_description(tmp_path: Path) -> None:
    """hiredis: "async reconnect leaks the callback list" did not find `redisCallbackList`: a word that begins a
    twentieth of the names (a C library's namespace) may begin a name made of the description's words."""
    root = tmp_path / "client"
    functions = "".join(f"int redisCommand{number}(void) {{ return {number}; }}\n" for number in range(24))
    write(root, "commands.c", functions)
    write(root, "async.h", "typedef struct redisCallbackList {\n    int head;\n} redisCallbackList;\n")
    write(root, "net.c", "int redisNetRead(void) { return 0; }\n")
    files = relevant(root, "reconnect leaks the callback list")["files"]
    reasons = {entry["path"]: entry["reasons"] for entry in files}  # type: ignore[attr-defined, index]
    assert any("redisCallbackList" in reason for reason in reasons.get("async.h", [])), reasons


def test_a_c_function_s_header_and_source_are_one_definer(tmp_path: Path) -> None:
    """jq: "where are jv strings reference-counted" put sixteen files that use `jv_string` above src/jv.c, which
    defines it: its prototype in jv.h made two definers, and each file's share of the name was split in two."""
    write(tmp_path, "src/jv.h", "typedef int jv;\njv jv_string(const char *s);\n")
    write(tmp_path, "src/jv.c", '#include "jv.h"\njv jv_string(const char *s) {\n  return 0;\n}\n')
    for n in range(6):
        write(tmp_path, f"src/use{n}.c", f'#include "jv.h"\nint use{n}(void) {{\n  return jv_string("a");\n}}\n')
    ranked = paths(relevant(tmp_path, "where are jv strings reference-counted"))
    assert ranked[:2] == ["src/jv.c", "src/jv.h"] or ranked[:2] == ["src/jv.h", "src/jv.c"], ranked


def test_a_plain_word_that_is_only_a_field_names_no_file_but_a_field_spelled_as_code_does(tmp_path: Path) -> None:
    """`currency` in "show the currency" is a word of the data, not the interface holding a field of that name
    (TypeScript's fields, new definitions, made hono's described files rank lower); `openapi_url` is code."""
    write(tmp_path, "package.json", '{"name": "shop"}\n')
    write(tmp_path, "src/money.ts", "export interface Money {\n  currency: string;\n  openapi_url: string;\n}\n")
    write(tmp_path, "src/currency.ts", "export function currency(code: string): string {\n  return code;\n}\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()

    def reasons(description: str) -> dict[str, list[str]]:
        files = api.relevant_files(index, {"description": description})["files"]
        return {entry["path"]: entry["reasons"] for entry in files}

    plain = reasons("show the currency on the receipt")
    assert any("defines currency" in reason for reason in plain["src/currency.ts"])
    assert not any("defines" in reason for reason in plain.get("src/money.ts", []))
    spelled = reasons("set openapi_url for the docs")
    assert any("defines openapi_url" in reason for reason in spelled["src/money.ts"])

"""Types as signatures write them, read from the text alone: a parameter's annotation (`app: Flask`), Java's and
C#'s `Type name` parameters and `Type name(` returns, Go's parameters, results and struct fields, a variable's
visible type (`new Cart(`, `: Cart`), Python's `->` return annotations, and the bases a class definition names. Pure
functions of a signature string, used by `receiver_types` to type receivers; which language writes a type where is
decided here, in `parameter_type`, `return_type` and `field_type`."""

from __future__ import annotations

import re

_CLASS_BASES = re.compile(r"^class\s+\w+\s*(?:\[[^\]]*\])?\(([^)]*)\)")
_GO_FIELD = re.compile(r"\w+\s+\*?([A-Za-z_][\w.]*)\s*(?:`[^`]*`)?\s*\Z")


_ANNOTATED_PARAMETER = re.compile(r"[(,]\s*\*{0,2}(\w+)\s*:\s*['\"]?(?:Optional\[)?([A-Za-z_][\w.]*)")


def parameter_annotation(signature: str, parameter: str) -> str | None:
    """The class a function's signature annotates a parameter with (`Optional[X]`, `"X"`, `a.X` give X)."""
    # One compiled pattern for every parameter: a pattern per name overflowed re's cache in a trace (500 compiles).
    for annotated in _ANNOTATED_PARAMETER.finditer(signature):
        if annotated.group(1) == parameter:
            return last_segment(annotated.group(2))
    return None


# Languages whose signatures put the type before the name: `void f(Cart cart)`, `public Cart copy()`, C++'s
# `void f(const Cart& cart)`.
PREFIX_TYPED_LANGUAGES = frozenset(("java", "csharp", "cpp"))
_PREFIX_TYPED_PARAMETER = re.compile(
    r"[(,]\s*(?:(?:final|in|ref|out|params|this|scoped|readonly|const|volatile|struct|class)\s+|@\w+(?:\([^()]*\))?\s+)*"
    r"([A-Za-z_][\w.:]*)(?:<[^()]*?>)?\??(?:\s*const)?(?:\s+|\s*[&*]+\s*)(\w+)\s*(?=[=,)\[])"
)
_PREFIX_RETURN_TYPE = re.compile(r"([A-Za-z_][\w.]*)(?:<[^()]*>)?(?:\[\])*\??\s+\Z")
_NOT_RETURN_TYPES = frozenset(("public", "private", "protected", "internal", "static", "final", "abstract", "new"))


def _prefix_parameter_type(signature: str, parameter: str) -> str | None:
    """The class a Java, C# or C++ signature gives a parameter (`f(final Cart cart)`, `F(List<Item> items)`,
    `f(const ns::Cart& cart)` give Cart, List and Cart)."""
    for typed in _PREFIX_TYPED_PARAMETER.finditer(signature):
        if typed.group(2) == parameter:
            return last_segment(typed.group(1))
    return None


_GO_PARAMETER = re.compile(r"[(,]\s*(\w+)\s+\*?([A-Za-z_][\w.]*)")


def _go_parameter_type(signature: str, parameter: str) -> str | None:
    """The type a Go signature gives a parameter, the method's receiver or a named result (`func (c *Command)
    Run(ctx context.Context) (cmd *Command, err error)`: c, cmd Command; ctx Context)."""
    for typed in _GO_PARAMETER.finditer(signature):
        if typed.group(1) == parameter:
            return last_segment(typed.group(2))
    return None


def _go_result_type(signature: str, name: str) -> str | None:
    """The type a Go function returns first, written after its parameters (`func New() *Engine`, `func
    CreateTestContext(w http.ResponseWriter) (c *Context, r *Engine)`: Engine, Context); None for a slice, map,
    function or channel."""
    at = signature.find(name + "(")
    if at < 0:
        return None
    depth, position = 0, at + len(name)
    for position in range(at + len(name), len(signature)):  # to the parameters' closing parenthesis
        depth += {"(": 1, ")": -1}.get(signature[position], 0)
        if depth == 0:
            break
    results = signature[position + 1 :].strip().removesuffix("{").strip()
    if results.startswith("("):
        results = results[1:].split(",", 1)[0].split(")", 1)[0].strip().rsplit(" ", 1)[-1]
    result = _GO_RESULT.match(results.lstrip("*"))
    return last_segment(result.group(0)) if result else None


_GO_RESULT = re.compile(r"[A-Za-z_][\w.]*")


def _prefix_return_type(signature: str, name: str) -> str | None:
    """The class a Java or C# method returns, written before its name (`public JsonObject deepCopy()`)."""
    return _type_before(signature, name, ("(", "<"))


def _prefix_declared_type(signature: str, name: str) -> str | None:
    """The class a Java or C# field is declared with (`private final Gson gson;`, `List<Item> items = ...`)."""
    return _type_before(signature, name, ("", "=", ";", ","))


def _type_before(signature: str, name: str, followers: tuple[str, ...]) -> str | None:
    """The type written before `name` where `name` is followed by one of `followers` ("": the end)."""
    at = signature.find(name)
    while at >= 0:
        after = signature[at + len(name) :].lstrip()
        if (at == 0 or not (signature[at - 1].isalnum() or signature[at - 1] == "_")) and after[:1] in followers:
            written = _PREFIX_RETURN_TYPE.search(signature[:at])
            if written is None or written.group(1) in _NOT_RETURN_TYPES:
                return None
            return last_segment(written.group(1))
        at = signature.find(name, at + 1)
    return None


def signature_type(signature: str) -> str | None:
    """The class a variable's signature gives it: `new Cart(`, `= Cart(`, `: Cart`, `&Cart{`."""
    for pattern in _TYPE_PATTERNS:
        match = pattern.search(signature)
        if match:
            return match.group(1)
    return None


_TYPE_PATTERNS = (
    re.compile(r"\bnew\s+([A-Z]\w*)"),
    re.compile(r"=\s*([A-Z]\w*)\s*[({]"),
    re.compile(r":\s*([A-Z]\w*)"),
    re.compile(r"&([A-Z]\w*)\{"),
)


def class_bases(signature: str) -> list[str]:
    """The classes a class definition names as its bases: Python's `class A(B, m.C):`, TS/JS's `class A<T extends
    X> extends B<T>` (the base's type arguments and the class's own type parameters left out)."""
    match = _CLASS_BASES.match(signature)
    if match:
        return [last_segment(base) for base in match.group(1).split(",") if base.strip() and "=" not in base]
    unbracketed = signature
    while "<" in unbracketed:  # innermost type arguments first: `<E extends Env<X>>`
        shorter = _TYPE_ARGUMENTS.sub("", unbracketed)
        if shorter == unbracketed:
            break
        unbracketed = shorter
    extends = _EXTENDS.search(unbracketed)
    if extends:
        return [last_segment(extends.group(1))]
    colon = _COLON_BASES.search(unbracketed)  # C#'s `class A : B, IC`, C++'s `class A : public B`
    if colon is None:
        return []
    bases = colon.group(1).split(" where ", 1)[0]  # C#'s constraints on type parameters follow the bases
    return [last_segment(base) for base in _BASE_NAMES.findall(bases)]


_TYPE_ARGUMENTS = re.compile(r"<[^<>]*>")
# After modifiers and annotations too: Java's `public final class A extends B`, TS's `@Injectable() export class`.
_EXTENDS = re.compile(r"(?:^|\s)class\b[^{(]*?\bextends\s+([A-Za-z_$][\w.$]*)")
_COLON_BASES = re.compile(r"(?:^|\s)(?:class|struct)\s+\w+\s*:\s*([^{]*)")
_BASE_NAMES = re.compile(r"(?:(?:public|protected|private|virtual)\s+)*([A-Za-z_][\w.:]*)(?:<[^<>]*>)?\s*(?:,|\Z)")


def last_segment(text: str) -> str:
    return text.split("[", 1)[0].strip().rsplit(".", 1)[-1].rsplit("::", 1)[-1]


_ARROW_RETURN_TYPE = re.compile(r"->\s*(?:Optional\[)?['\"]?([A-Za-z_][\w.]*)")


def _arrow_return_type(signature: str) -> str | None:
    """The class a `->` annotation returns (Python, Rust): `-> Optional["Cart"]` gives Cart."""
    returned = _ARROW_RETURN_TYPE.search(signature)
    return last_segment(returned.group(1)) if returned else None


def _go_field_type(signature: str) -> str | None:
    """The type of a Go struct field as the outline keeps it (`engine *Engine`, `` Name string `json:"name"` ``)."""
    field = _GO_FIELD.match(signature)
    return last_segment(field.group(1)) if field else None


def parameter_type(language: str, signature: str, parameter: str) -> str | None:
    """The class a function's signature gives a parameter, as its language writes it: an annotation (`app:
    Flask`), else Java's, C#'s and C++'s `Cart cart`, Go's `c *Context`."""
    annotated = parameter_annotation(signature, parameter)
    if annotated is None and language in PREFIX_TYPED_LANGUAGES:
        return _prefix_parameter_type(signature, parameter)
    if annotated is None and language == "go":
        return _go_parameter_type(signature, parameter)
    return annotated


def return_type(language: str, signature: str, name: str) -> str | None:
    """The class the function `name` returns, as its language writes it: `-> Cart`, else `Cart name(`, Go's
    first result."""
    returned = _arrow_return_type(signature)
    if returned is None and language in PREFIX_TYPED_LANGUAGES:
        return _prefix_return_type(signature, name)
    if returned is None and language == "go":
        return _go_result_type(signature, name)
    return returned


def field_type(language: str, signature: str, name: str) -> str | None:
    """The class a class-body variable or struct field `name` is given (`x: X`, `x = X()`, `new X(`), else
    declared with (Go's `engine *Engine`, Java's `private final Gson gson;`)."""
    shown = signature_type(signature)
    if shown is None and language == "go":
        return _go_field_type(signature)
    if shown is None and language in PREFIX_TYPED_LANGUAGES:
        return _prefix_declared_type(signature, name)
    return shown

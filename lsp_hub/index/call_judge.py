"""Whether one call site may call one definition (`CallJudge`), for `callers` and `references`: what the resolver
says the calling file may mean, then the receiver (`self`, an import, a class named like it, a variable its function
types, a module variable made by an outside call), judged once per query for all of its sites.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsp_hub.index.graph import MODULE_SCOPED_LANGUAGES, SELF_RECEIVERS, chain_head, use_resolver
from lsp_hub.index.graph_inputs import COMMON_NAMES
from lsp_hub.index.model import Definition, FileIndex
from lsp_hub.index.path_tables import squashed
from lsp_hub.index.receiver_types import (
    OUTSIDE,
    TypeInference,
    WorkspaceClass,
    attribute_type,
    cloud_definer,
    declared_class,
    owned_by,
)
from lsp_hub.index.symbols import definitions_named, has_parameter, plain_name_can_mean
from lsp_hub.index.type_clouds import TypeCloud
from lsp_hub.index.workspace import Snapshot


@dataclass(frozen=True, slots=True)
class CallTarget:
    """A definition whose callers are looked for, in its file."""

    path: str
    definition: Definition

    @property
    def key(self) -> tuple[str, str, str | None, int]:
        return (self.path, self.definition.name, self.definition.container, self.definition.span.start_line)


# Where `TypeInference` types a receiver from its function's variables and parameters.
INFERRED_LANGUAGES = frozenset(("python", "typescript", "tsx"))
# Where a variable's declared type decides, when it is a workspace class (`_statically_typed`).
STATICALLY_TYPED_LANGUAGES = frozenset(("rust", "java", "csharp", "go", "cpp"))


class CallJudge:
    """Whether a call site may call a target. What does not depend on the target is worked out once per query: a
    query for a common name (`get`: 64 definitions, 1,300 call sites in the standard library) asks the same
    questions of every site for every target."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.resolver = use_resolver(snapshot)
        self._targets: dict[tuple[str, str, str | None], tuple[str, ...]] = {}
        self._attribute_types: dict[tuple[str, str, str], str | None] = {}
        self._inherits: dict[tuple[str, str], bool] = {}
        self._reached: dict[tuple[str, str, str | None, bool], bool] = {}
        self._receiver_classes: dict[tuple[str, str], str | None] = {}
        # By the caller's identity: callers come from the files' cached indexes, held by `_CallSites` for the query.
        self._inferred: dict[tuple[str, str, int, int | None], WorkspaceClass | TypeCloud | str | None] = {}
        self._squashed: dict[str, str] = {}

    def counts(
        self,
        source: str,
        file_index: FileIndex,
        used_name: str,
        receiver: str | None,
        caller: Definition | None,
        target: CallTarget,
        definition_count: int,
        line: int | None = None,
    ) -> bool:
        """Whether a call of `used_name` in `source` (with `receiver`) may be a call of this target (`used_name` is
        the target's name, or a local alias of it)."""
        definition = target.definition
        key = (source, used_name, receiver)
        targets = self._targets.get(key)
        if targets is None:
            targets = self._targets[key] = self.resolver.targets(source, used_name, receiver)
        if target.path not in targets:
            bound = self.resolver.bindings.get(source, {}).get(receiver) if receiver is not None else None
            if receiver is not None and bound is not None:
                # `from app import app` inside one test binds `app` for the resolver in the whole file; another
                # test's own `app = Flask()` says what its `app` is
                in_scope = self._typed_in_scope(source, file_index, receiver, caller, definition)
                return (
                    in_scope if in_scope is not None else self._imported_instance_reaches(bound, receiver, definition)
                )
            # `this.send()` in a subclass whose file defines another `send`: the resolver keeps to the file, but the
            # class may inherit the target (or `super` reach it)
            return (
                receiver in SELF_RECEIVERS
                and caller is not None
                and caller.container is not None
                and definition.container not in (None, caller.container)
                and self._reaches(caller.container, definition, bases_only=receiver == "super")
            )
        is_member = definition.container is not None and definition.kind == "method"
        if receiver is None:
            # A plain `name()` reaches a class's member (a method, an attribute: `type(self)` is not `Option.type`)
            # only from inside its class, which these languages do not allow.
            return plain_name_can_mean(self.snapshot, file_index.language, target.path, definition)
        if receiver in SELF_RECEIVERS:
            if caller is None or caller.container is None or definition.container is None:
                return True
            if receiver == "super":  # `super().save()`: the nearest base that defines it
                return self._reaches(caller.container, definition, bases_only=True)
            # `self.save()`: the class's own, else the nearest base's (a subclass calling an inherited method)
            return caller.container == definition.container or self._reaches(caller.container, definition)
        if self.resolver.bindings.get(source, {}).get(receiver) is not None:
            return True  # `module.name` or `ImportedClass.name`: the resolver already checked where it leads
        head = chain_head(receiver)
        if head in SELF_RECEIVERS and caller is not None and caller.container is not None:
            known_type = self._attribute_type(source, file_index, caller.container, receiver[len(head) + 1 :])
            if known_type is not None:
                # `self.store.write()` with `self.store = IndexStore()` (or a subclass of the method's class)
                return definition.container is not None and self._reaches(known_type, definition)
        if not is_member and head is not None and head not in SELF_RECEIVERS:
            return True  # `package.module.name()`: the resolver matched the module path
        container = definition.container
        if definition.kind == "function" and container is None and file_index.language in MODULE_SCOPED_LANGUAGES:
            # `app.use()` is not the module function `use`: that is reached through its module (bound above)
            return False
        if (
            container is not None
            and file_index.language in STATICALLY_TYPED_LANGUAGES
            and all(part.isidentifier() for part in receiver.split("."))  # `c`, `c.engine`: typed fields too
        ):
            typed = self._statically_typed(source, file_index, receiver, caller, definition, line)
            if typed is not None:
                return typed
        if container is not None and self._squash(receiver) == self._squash(container):
            if file_index.language in INFERRED_LANGUAGES and receiver.isidentifier():
                # What the function types the variable as decides before its name: `text: str` or `text = "a,b"`
                # makes `text.split()` no call of a workspace `Text.split`.
                inferred = self._inferred_class(source, file_index, receiver, caller, line)
                if inferred == OUTSIDE:
                    return False
                if isinstance(inferred, WorkspaceClass):
                    return self._reaches(inferred.name, definition)
            return True  # `Cart.total()`, `cart.total()`
        last = receiver.replace("::", ".").rpartition(".")[2]
        if container is not None and last != receiver and self._squash(last) == self._squash(container):
            return True  # `Rack::Utils.parse_query()`, `models.Cart.total()`: the chain ends in the class
        known_class = self._receiver_class(source, file_index, receiver)
        if known_class is not None:  # `app = Flask(...)`; `app.route()` reaches Scaffold.route through the bases
            return known_class == container or self._reaches(known_class, definition)
        if container is not None and file_index.language == "go" and receiver.isidentifier():
            # Go: only a variable made by an outside package's call is judged (`t := template.New(...)`)
            if self._inferred_class(source, file_index, receiver, caller, line) == OUTSIDE:
                return False
        elif container is not None and file_index.language in INFERRED_LANGUAGES:
            inferred = self._inferred_class(source, file_index, receiver, caller, line)
            if inferred == OUTSIDE:
                return False  # `task = asyncio.ensure_future(...)`, `future: asyncio.Future`: not a workspace object
            if isinstance(inferred, WorkspaceClass):
                # the nearest definition in its inheritance: `app.add_url_rule()` on a Flask is App's, not Scaffold's
                return self._reaches(inferred.name, definition)
            if isinstance(inferred, TypeCloud):
                reached = cloud_definer(self.snapshot, inferred, definition.name)
                if reached is not None:  # `res.json()` on the typed client's response: the one cloud class with json
                    return reached == container
        return definition_count == 1 and definition.name not in COMMON_NAMES

    def _statically_typed(
        self,
        source: str,
        file_index: FileIndex,
        receiver: str,
        caller: Definition | None,
        definition: Definition,
        line: int | None,
    ) -> bool | None:
        """Rust, Java, C#, Go, C++: a variable, parameter or field its code types (`let other: Self = other.into()`,
        `let app = Router::new()`, `fn f(router: Router)`, `JsonObject copy = ...`, `func (c *Context)`, `Writer*
        w`) decides before its name does (`other.route()` is not `Other`'s; `copy.deepCopy()` is JsonObject's, not
        JsonArray's); None when nothing types it, when the method is an interface's or trait's own (any implementor
        may take the call), or in Go when the type does not reach it (a method promoted from an embedded type)."""
        inferred = self._inferred_class(source, file_index, receiver, caller, line)
        if not isinstance(inferred, WorkspaceClass):
            return None
        if self._reaches(inferred.name, definition):
            return True
        if file_index.language == "go":
            return None  # a method promoted from an embedded type the index did not follow: left to the name
        owners = definitions_named(self.snapshot, definition.container or "")
        return None if any(owner.kind == "interface" for _path, owner in owners) else False

    def _squash(self, text: str) -> str:
        known = self._squashed.get(text)
        if known is None:
            known = self._squashed[text] = squashed(text)
        return known

    def _attribute_type(self, source: str, file_index: FileIndex, owner: str, attribute: str) -> str | None:
        key = (source, owner, attribute)
        if key not in self._attribute_types:
            self._attribute_types[key] = attribute_type(file_index, owner, attribute)
        return self._attribute_types[key]

    def _class_inherits(self, class_name: str, container: str) -> bool:
        key = (class_name, container)
        known = self._inherits.get(key)
        if known is None:
            known = self._inherits[key] = WorkspaceClass(self.snapshot, class_name).inherits(container)
        return known

    def _typed_in_scope(
        self, source: str, file_index: FileIndex, receiver: str, caller: Definition | None, definition: Definition
    ) -> bool | None:
        """Whether the calling function (or one around it) types `receiver` as a class that reaches the method;
        None when the function has no variable or parameter of that name (the import stands)."""
        if caller is None or definition.container is None or file_index.language not in INFERRED_LANGUAGES:
            return None if caller is None else False
        own_variable = any(
            name == receiver and owned_by(owner, caller) for owner, name, _typed in file_index.local_types
        )
        if not (own_variable or has_parameter(caller.signature, receiver)):
            return None  # only the function's own variable or parameter stands against an import of the file
        inferred = self._inferred_class(source, file_index, receiver, caller)
        return isinstance(inferred, WorkspaceClass) and self._reaches(inferred.name, definition)

    def _imported_instance_reaches(self, bound: tuple[str, ...], receiver: str, definition: Definition) -> bool:
        """Whether `receiver`, imported from a module that makes it (`app = Flask(__name__)` in the package,
        `from js_example import app` in its views), is of a class that reaches the method."""
        if definition.container is None or "." in receiver:
            return False
        for path in bound:
            record = self.snapshot.files.get(path)
            made = declared_class(record.outline(), receiver) if record is not None else None
            if made is not None and self._reaches(made, definition):
                return True
        return False

    def _reaches(self, class_name: str, definition: Definition, bases_only: bool = False) -> bool:
        """Whether a call of `definition`'s name on an instance of `class_name` (on its bases: `super()`) reaches
        `definition`: the nearest class in its inheritance that defines the name is the definition's."""
        key = (class_name, definition.name, definition.container, bases_only)
        known = self._reached.get(key)
        if known is None:
            members = WorkspaceClass(self.snapshot, class_name).member(definition.name, bases_only)
            known = self._reached[key] = any(member.container == definition.container for _path, member in members)
        return known

    def _receiver_class(self, source: str, file_index: FileIndex, receiver: str) -> str | None:
        key = (source, receiver)
        if key not in self._receiver_classes:
            self._receiver_classes[key] = declared_class(file_index, receiver)
        return self._receiver_classes[key]

    def _inferred_class(
        self, source: str, file_index: FileIndex, receiver: str, caller: Definition | None, line: int | None = None
    ) -> WorkspaceClass | TypeCloud | str | None:
        key = (source, receiver, id(caller), line)
        if key not in self._inferred:
            inference = TypeInference(self.snapshot, source, file_index)
            self._inferred[key] = inference.receiver_class(receiver, caller, line)
        return self._inferred[key]

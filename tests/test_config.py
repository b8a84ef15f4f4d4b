"""Configuration layers: defaults, precedence, deep merge, error reporting, and what untrusted projects may do."""

from __future__ import annotations

import os
import threading
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.config.layers import CLIENT_SOURCE, ConfigProblem
from lsp_hub.config.loader import LoadedConfig, load_config
from lsp_hub.config.model import Config
from lsp_hub.config.trust import TrustStore

REPO_ROOT = Path(__file__).resolve().parent.parent




@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def user_file(xdg: Path, text: str) -> Path:
    path = xdg / "lsp-hub" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def project_file(root: Path, text: str) -> Path:
    path = root / ".lsp-hub.toml"
    path.write_text(text)
    return path


def problem_lines(loaded: LoadedConfig) -> list[str]:
    return [str(problem) for problem in loaded.problems]


# ==================================================================================================== defaults
def test_defaults_load_without_problems_and_cover_the_languages(workspace: Path) -> None:
    loaded = load_config(workspace_roots=[workspace])
    assert loaded.problems == []
    config = loaded.config

    def servers_for(path: str, language_id: str | None = None) -> tuple[str, ...]:
        language = config.language_for(language_id=language_id, path=path)
        assert language is not None, path
        return language.servers

    assert servers_for("/w/a.py") == ("basedpyright", "ruff")
    assert servers_for("/w/a.pyi") == ("basedpyright", "ruff")
    for name in ("a.ts", "a.mts", "a.cts", "a.js", "a.mjs", "a.cjs", "a.tsx", "a.jsx"):
        assert servers_for(f"/w/{name}") == ("typescript-language-server",)
    for language_id in ("typescript", "javascript", "typescriptreact", "javascriptreact"):
        assert servers_for("/w/untitled", language_id) == ("typescript-language-server",)
    assert servers_for("/w/a.c") == ("clangd",)
    assert servers_for("/w/a.cpp") == ("clangd",)
    assert servers_for("/w/a.hpp") == ("clangd",)
    assert servers_for("/w/a.go") == ("gopls",)
    assert servers_for("/w/a.rs") == ("rust-analyzer",)
    assert servers_for("/w/a.sh") == ("bash-language-server",)
    assert servers_for("/w/a.yaml") == ("yaml-language-server",)
    assert servers_for("/w/a.yml") == ("yaml-language-server",)
    assert servers_for("/w/a.json") == ("vscode-json-language-server",)
    assert servers_for("/w/a.html") == ("vscode-html-language-server",)
    for name in ("a.css", "a.scss", "a.less"):
        assert servers_for(f"/w/{name}") == ("vscode-css-language-server",)

    servers = config.servers
    assert (servers["basedpyright"].command, servers["basedpyright"].args) == ("basedpyright-langserver", ("--stdio",))
    assert (servers["ruff"].command, servers["ruff"].args) == ("ruff", ("server",))
    assert servers["typescript-language-server"].args == ("--stdio",)
    assert servers["bash-language-server"].args == ("start",)
    assert "jedi-language-server" in servers and "pylsp" in servers
    assert servers["gopls"].root_markers == ("go.work", "go.mod", ".git")
    assert "Cargo.toml" in servers["rust-analyzer"].root_markers
    assert servers["clangd"].root_markers[0] == "compile_commands.json"
    assert "tsconfig.json" in servers["typescript-language-server"].root_markers
    # Every language names only defined servers.
    for language in config.languages.values():
        assert set(language.servers) <= set(servers), language.name


def test_packaged_defaults_match_the_readable_copy() -> None:
    packaged = resources.files("lsp_hub.config").joinpath("defaults.toml").read_text(encoding="utf-8")
    assert packaged == (REPO_ROOT / "configs" / "defaults.toml").read_text(encoding="utf-8")


def test_hub_options_come_from_the_hub_table(xdg_config: Path, workspace: Path) -> None:
    user_file(xdg_config, "[hub]\nrequest_timeout_seconds = 3\nmax_restarts = 2\n")
    hub = load_config(workspace_roots=[workspace]).config.hub
    assert hub.request_timeout_seconds == 3.0
    assert hub.max_restarts == 2
    assert hub.idle_shutdown_seconds == 600.0
    assert hub.trust_workspace is False


def test_index_options_come_from_the_index_table(xdg_config: Path, workspace: Path) -> None:
    assert load_config(workspace_roots=[workspace]).config.index.cache_max_mb == 2048
    user_file(xdg_config, "[index]\ncache_max_mb = 300\n")
    assert load_config(workspace_roots=[workspace]).config.index.cache_max_mb == 300
    user_file(xdg_config, "[index]\ncache_max_mb = 0\ncache_size = 3\n")
    loaded = load_config(workspace_roots=[workspace])
    assert {problem.key for problem in loaded.problems} == {"index.cache_max_mb", "index.cache_size"}
    assert loaded.config.index.cache_max_mb == 2048


def test_project_file_with_inf_and_nan_timings_is_reported_and_defaults_apply(xdg_config: Path,
                                                                               workspace: Path) -> None:
    user_file(xdg_config, "[hub]\ninitialize_timeout_seconds = 20\n")
    project = project_file(workspace, "[hub]\nrequest_timeout_seconds = inf\ninitialize_timeout_seconds = nan\n"
                                      "idle_shutdown_seconds = -1\nmax_restarts = 5000\n"
                                      "diagnostics_debounce_seconds = 0.5\n"
                                      "[server.ruff]\nrequest_timeout_seconds = -inf\nroot_markers = [\"x\"]\n")
    loaded = load_config(workspace_roots=[workspace])
    by_key = {problem.key: problem for problem in loaded.problems}
    assert set(by_key) == {"hub.request_timeout_seconds", "hub.initialize_timeout_seconds",
                           "hub.idle_shutdown_seconds", "hub.max_restarts", "server.ruff.request_timeout_seconds"}
    assert all(problem.source == str(project) for problem in loaded.problems)
    assert "expected a finite number from 0.01 to 3600, got inf" in by_key["hub.request_timeout_seconds"].message
    assert "got nan" in by_key["hub.initialize_timeout_seconds"].message
    hub = loaded.config.hub
    assert hub.request_timeout_seconds == 10.0  # the default
    assert hub.initialize_timeout_seconds == 20.0  # the user's value: the earlier layer still applies
    assert (hub.idle_shutdown_seconds, hub.max_restarts) == (600.0, 5)
    assert hub.diagnostics_debounce_seconds == 0.5  # the valid keys of the same table apply
    ruff = loaded.config.servers["ruff"]
    assert ruff.request_timeout_seconds is None and ruff.root_markers == ("x",)


def test_client_numbers_are_checked_too(workspace: Path) -> None:
    loaded = load_config(workspace_roots=[workspace],
                         init_options={"hub": {"requestTimeoutSeconds": float("nan"), "restartWindowSeconds": 0}})
    assert [(problem.source, problem.key) for problem in loaded.problems] == \
        [(CLIENT_SOURCE, "hub.requestTimeoutSeconds")]
    assert loaded.config.hub.request_timeout_seconds == 10.0
    assert loaded.config.hub.restart_window_seconds == 0.0


# ==================================================================================================== layers
def test_layers_apply_in_order_later_wins(tmp_path: Path, xdg_config: Path, workspace: Path) -> None:
    user_file(xdg_config, '[server.ruff]\nroot_markers = ["user"]\nrequest_timeout_seconds = 1\n'
                          '[language.python]\nservers = ["ruff"]\n')
    project_file(workspace, '[server.ruff]\nroot_markers = ["project"]\nsettings = {from = "project"}\n')
    cli = tmp_path / "cli.toml"
    cli.write_text('[server.ruff]\nsettings = {from = "cli"}\n[hub]\nidle_shutdown_seconds = 5\n')
    loaded = load_config(workspace_roots=[workspace], cli_config=cli,
                         init_options={"server": {"ruff": {"request_timeout_seconds": 7}}})
    assert loaded.problems == []
    ruff = loaded.config.servers["ruff"]
    assert ruff.root_markers == ("project",)  # project over user
    assert ruff.settings == {"from": "cli"}  # --config over project
    assert ruff.request_timeout_seconds == 7.0  # client over user
    assert ruff.command == "ruff"  # untouched keys come from the defaults
    assert loaded.config.languages["python"].servers == ("ruff",)
    assert loaded.config.hub.idle_shutdown_seconds == 5.0
    assert [layer.kind for layer in loaded.layers] == ["defaults", "user", "project", "cli", "client"]


def test_explicit_user_config_path_is_used(tmp_path: Path, workspace: Path) -> None:
    custom = tmp_path / "elsewhere.toml"
    custom.write_text("[server.gopls]\ndisabled = true\n")
    loaded = load_config(workspace_roots=[workspace], user_config_path=custom)
    assert loaded.config.servers["gopls"].disabled


def test_a_layer_that_disables_a_server_keeps_its_other_keys(xdg_config: Path, workspace: Path) -> None:
    user_file(xdg_config, "[server.ruff]\ndisabled = true\n")
    ruff = load_config(workspace_roots=[workspace]).config.servers["ruff"]
    assert ruff.disabled
    assert ruff.command == "ruff"
    assert ruff.args == ("server",)
    assert ".ruff.toml" in ruff.root_markers


def test_settings_merge_recursively_and_lists_replace(xdg_config: Path, workspace: Path) -> None:
    user_file(xdg_config, '[server.basedpyright]\nsettings = {basedpyright = {analysis = {mode = "strict", x = 1}}}\n'
                          'env = {A = "1"}\n')
    project_file(workspace, '[server.basedpyright]\nsettings = {basedpyright = {analysis = {mode = "basic"}}}\n'
                            'only_features = ["textDocument/hover"]\n')
    loaded = load_config(workspace_roots=[workspace])
    spec = loaded.config.servers["basedpyright"]
    assert spec.settings == {"basedpyright": {"analysis": {"mode": "basic", "x": 1}}}
    assert spec.env == {"A": "1"}
    assert spec.only_features == ("textDocument/hover",)
    assert spec.allows("textDocument/hover") and not spec.allows("textDocument/definition")


def test_a_later_language_takes_over_an_extension(xdg_config: Path, workspace: Path) -> None:
    user_file(xdg_config, '[language.snake]\nextensions = ["py"]\nservers = ["jedi-language-server"]\n')
    config = load_config(workspace_roots=[workspace]).config
    # python comes first in the languages, yet the later layer's claim on "py" wins.
    snake = config.language_for(language_id=None, path="/w/a.py")
    assert snake is not None and snake.name == "snake"
    assert config.languages["python"].extensions == ("pyi",)
    python = config.language_for(language_id="python", path="/w/a.py")
    assert python is not None and python.name == "python"


def test_lists_from_toml_become_tuples(workspace: Path) -> None:
    loaded = load_config(workspace_roots=[workspace], init_options={"server": {"ruff": {"args": ["server", "-v"]}}})
    assert loaded.config.servers["ruff"].args == ("server", "-v")
    assert isinstance(loaded.config, Config)


# ==================================================================================================== errors
def test_invalid_toml_names_the_file_and_other_layers_still_apply(tmp_path: Path, xdg_config: Path,
                                                                   workspace: Path) -> None:
    broken = user_file(xdg_config, "[server.ruff\ndisabled = true\n")
    cli = tmp_path / "cli.toml"
    cli.write_text("[server.gopls]\ndisabled = true\n")
    loaded = load_config(workspace_roots=[workspace], cli_config=cli)
    assert len(loaded.problems) == 1
    problem = loaded.problems[0]
    assert problem.source == str(broken)
    assert "invalid TOML" in problem.message and "line 1" in problem.message
    assert loaded.config.servers["gopls"].disabled  # the valid layer applies
    assert not loaded.config.servers["ruff"].disabled  # nothing from the broken file
    assert loaded.config.servers["basedpyright"].command == "basedpyright-langserver"  # defaults remain


def test_wrong_type_names_file_key_and_expectation_and_skips_only_that_table(workspace: Path) -> None:
    project = project_file(workspace, "[server.ruff]\nargs = 5\nroot_markers = [\"x\"]\n"
                                      "[server.gopls]\ndisabled = true\n")
    loaded = load_config(workspace_roots=[workspace])
    assert problem_lines(loaded) == [
        f"{project}: server.ruff.args: expected a list of strings, got int; [server.ruff] from this source is ignored"
    ]
    assert loaded.problems[0] == ConfigProblem(str(project), "server.ruff.args", loaded.problems[0].message)
    assert loaded.config.servers["ruff"].args == ("server",)
    assert loaded.config.servers["ruff"].root_markers != ("x",)  # the whole broken table is skipped
    assert loaded.config.servers["gopls"].disabled  # the other table of the same file applies


@pytest.mark.parametrize(
    ("toml", "key", "expected"),
    [
        ('[server.ruff]\ndisabled = "yes"\n', "server.ruff.disabled", "expected true or false, got string"),
        ('[server.ruff]\nargs = ["a", 1]\n', "server.ruff.args", "expected a list of strings, got a list of int, "
                                                                 "string"),
        ('[server.ruff]\nargs = "server"\n', "server.ruff.args", "expected a list of strings, got string"),
        ('[server.ruff]\nenv = {A = 1}\n', "server.ruff.env", "expected a table of strings, got a table of int"),
        ("[server.ruff]\nsettings = 3\n", "server.ruff.settings", "expected a table, got int"),
        ('[server.ruff]\nrequest_timeout_seconds = "1"\n', "server.ruff.request_timeout_seconds",
         "expected a number, got string"),
        ("[hub]\nmax_restarts = 1.5\n", "hub.max_restarts", "expected an integer, got float"),
        ('[language.python]\nservers = "ruff"\n', "language.python.servers", "expected a list of strings, got string"),
        ("server = 3\n", "server", "expected a table of [server.NAME] tables, got int"),
    ],
)
def test_type_errors_are_reported_precisely(xdg_config: Path, workspace: Path, toml: str, key: str,
                                            expected: str) -> None:
    path = user_file(xdg_config, toml)
    loaded = load_config(workspace_roots=[workspace])
    assert len(loaded.problems) == 1, problem_lines(loaded)
    problem = loaded.problems[0]
    assert (problem.source, problem.key) == (str(path), key)
    assert problem.message.startswith(expected)
    assert loaded.config.servers["ruff"].args == ("server",)


def test_unknown_keys_are_problems_but_the_rest_of_the_layer_applies(xdg_config: Path, workspace: Path) -> None:
    path = user_file(xdg_config, "colour = 1\n[server.ruff]\ndissabled = true\nargs = [\"server\", \"-q\"]\n"
                                 "[language.python]\nextension = [\"py\"]\nservers = [\"ruff\"]\n")
    loaded = load_config(workspace_roots=[workspace])
    by_key = {problem.key: problem for problem in loaded.problems}
    assert set(by_key) == {"colour", "server.ruff.dissabled", "language.python.extension"}
    assert all(problem.source == str(path) for problem in loaded.problems)
    assert "did you mean 'disabled'" in by_key["server.ruff.dissabled"].message
    assert "did you mean 'extensions'" in by_key["language.python.extension"].message
    assert loaded.config.servers["ruff"].args == ("server", "-q")
    assert not loaded.config.servers["ruff"].disabled
    assert loaded.config.languages["python"].servers == ("ruff",)


def test_missing_cli_config_is_a_problem(tmp_path: Path, workspace: Path) -> None:
    missing = tmp_path / "nope.toml"
    loaded = load_config(workspace_roots=[workspace], cli_config=missing)
    assert problem_lines(loaded) == [f"{missing}: file not found"]
    assert "ruff" in loaded.config.servers


def test_new_server_needs_a_command_and_languages_need_known_servers(xdg_config: Path, workspace: Path) -> None:
    path = user_file(xdg_config, '[server.mystery]\nargs = ["x"]\n[language.python]\nservers = ["ruff", "ghost"]\n')
    loaded = load_config(workspace_roots=[workspace])
    assert sorted(problem.key for problem in loaded.problems) == ["language.python.servers", "server.mystery"]
    assert all(problem.source == str(path) for problem in loaded.problems)
    assert "mystery" not in loaded.config.servers
    assert loaded.config.languages["python"].servers == ("ruff",)


def test_name_key_and_file_trust_flag_are_rejected(xdg_config: Path, workspace: Path) -> None:
    user_file(xdg_config, '[server.ruff]\nname = "other"\n[hub]\ntrust_workspace = true\n')
    loaded = load_config(workspace_roots=[workspace])
    assert sorted(problem.key for problem in loaded.problems) == ["hub.trust_workspace", "server.ruff.name"]
    assert loaded.config.servers["ruff"].name == "ruff"
    assert loaded.config.hub.trust_workspace is False
    assert loaded.trusted_roots == frozenset()


def test_client_options_with_wrong_shapes_are_reported(workspace: Path) -> None:
    loaded = load_config(workspace_roots=[workspace], init_options={"server": {"ruff": 3}, "trustWorkspace": "yes"})
    assert {problem.source for problem in loaded.problems} == {CLIENT_SOURCE}
    assert {problem.key for problem in loaded.problems} == {"server.ruff", "trustWorkspace"}
    assert loaded.trusted_roots == frozenset()


def test_client_options_accept_camel_case_keys(workspace: Path) -> None:
    loaded = load_config(workspace_roots=[workspace], init_options={
        "server": {"ruff": {"rootMarkers": ["a"], "exceptFeatures": ["diagnostics"],
                            "settings": {"lineLength": 100}}},
    })
    assert loaded.problems == []
    ruff = loaded.config.servers["ruff"]
    assert ruff.root_markers == ("a",)
    assert not ruff.allows("diagnostics")
    assert ruff.settings == {"lineLength": 100}  # values are passed as they are


# ==================================================================================================== trust
UNTRUSTED_PROJECT = """
[server.ruff]
command = "/tmp/evil"
args = ["--pwn"]
env = {LD_PRELOAD = "/tmp/evil.so"}
version_args = ["--pwn"]
settings = {lint = {select = ["E"]}}
disabled = true

[server.evil]
command = "/tmp/evil"

[language.python]
servers = ["ruff", "jedi-language-server"]
"""


def test_untrusted_project_cannot_choose_programs_but_can_reconfigure(workspace: Path) -> None:
    project = project_file(workspace, UNTRUSTED_PROJECT)
    loaded = load_config(workspace_roots=[workspace])
    hint = f"workspace not trusted; run `lsp-hub trust {workspace}`"
    assert sorted(problem_lines(loaded)) == sorted([
        f"{project}: server.ruff.command: ignored: {hint}",
        f"{project}: server.ruff.args: ignored: {hint}",
        f"{project}: server.ruff.env: ignored: {hint}",
        f"{project}: server.ruff.version_args: ignored: {hint}",
        f"{project}: server.evil: new server ignored: {hint}",
    ])
    config = loaded.config
    ruff = config.servers["ruff"]
    assert (ruff.command, ruff.args, ruff.env, ruff.version_args) == ("ruff", ("server",), {}, ("--version",))
    assert ruff.disabled  # disabling is allowed
    assert ruff.settings == {"lint": {"select": ["E"]}}  # re-configuring is allowed
    assert "evil" not in config.servers
    assert config.languages["python"].servers == ("ruff", "jedi-language-server")  # reordering is allowed
    assert loaded.trusted_roots == frozenset()
    assert [layer.trusted for layer in loaded.layers if layer.kind == "project"] == [False]


def test_untrusted_project_cannot_point_settings_at_programs(workspace: Path) -> None:
    project = project_file(workspace, """
[server.basedpyright]
settings = {python = {pythonPath = "./evil", analysis = {extraPaths = ["src"], typeCheckingMode = "strict"}}}
[server.typescript-language-server]
initialization_options = {tsserver = {path = "./evil.js", logVerbosity = "off"}}
[server.gopls]
settings = {gopls = {env = {GOFLAGS = "-toolexec=./evil"}, staticcheck = true}}
""")
    loaded = load_config(workspace_roots=[workspace])
    assert sorted(problem.key for problem in loaded.problems) == [
        "server.basedpyright.settings.python.analysis.extraPaths",  # *path* anywhere: erring on the safe side
        "server.basedpyright.settings.python.pythonPath",
        "server.gopls.settings.gopls.env",
        "server.typescript-language-server.initialization_options.tsserver.path",
    ]
    assert all(str(problem).startswith(f"{project}: ") for problem in loaded.problems)
    servers = loaded.config.servers
    assert servers["basedpyright"].settings == {"python": {"analysis": {"typeCheckingMode": "strict"}}}
    assert servers["typescript-language-server"].initialization_options == {"tsserver": {"logVerbosity": "off"}}
    assert servers["gopls"].settings == {"gopls": {"staticcheck": True}}

    store = TrustStore()
    store.add(workspace)
    trusted = load_config(workspace_roots=[workspace])
    assert trusted.problems == []
    assert trusted.config.servers["basedpyright"].settings["python"]["pythonPath"] == "./evil"


def test_untrusted_program_settings_are_found_at_every_depth_and_inside_lists(workspace: Path) -> None:
    project = project_file(workspace, """
[server.typescript-language-server.initialization_options]
plugins = [{ name = "evil-plugin", location = "." }]
npmLocation = "./node_modules/.bin/npm"
preferences = { quotePreference = "single" }
extras = [{ nested = { fallbackPath = "./ts.js", ok = 1 } }, "plain", [{ command = "./x" }]]
[server.typescript-language-server.initialization_options.tsserver]
logVerbosity = "off"
fallbackPath = "./evil/tsserver.js"
[server.rust-analyzer.settings.rust-analyzer]
check = { overrideCommand = ["./evil"] }
procMacro = { server = "./evil-srv" }
cargo = { buildScripts = { enable = true } }
""")
    loaded = load_config(workspace_roots=[workspace])
    prefix = "server.typescript-language-server.initialization_options"
    assert sorted(problem.key for problem in loaded.problems) == sorted([
        f"{prefix}.plugins",
        f"{prefix}.npmLocation",
        f"{prefix}.extras[0].nested.fallbackPath",
        f"{prefix}.extras[2][0].command",
        f"{prefix}.tsserver.fallbackPath",
        "server.rust-analyzer.settings.rust-analyzer.check.overrideCommand",
        "server.rust-analyzer.settings.rust-analyzer.procMacro.server",
    ])
    assert all(problem.source == str(project) and "may name a program" in problem.message
               for problem in loaded.problems)
    servers = loaded.config.servers
    assert servers["typescript-language-server"].initialization_options == {
        "preferences": {"quotePreference": "single"},
        "extras": [{"nested": {"ok": 1}}, "plain", [{}]],
        "tsserver": {"logVerbosity": "off"},
    }
    assert servers["rust-analyzer"].settings == {
        "rust-analyzer": {"check": {}, "procMacro": {}, "cargo": {"buildScripts": {"enable": True}}}}


def test_trusted_and_user_layers_may_set_plugins(workspace: Path, xdg_config: Path) -> None:
    user_file(xdg_config, '[server.typescript-language-server.initialization_options]\n'
                          'plugins = [{ name = "my-plugin", location = "/opt/plugins" }]\n')
    loaded = load_config(workspace_roots=[workspace])
    assert loaded.problems == []
    assert loaded.config.servers["typescript-language-server"].initialization_options == {
        "plugins": [{"name": "my-plugin", "location": "/opt/plugins"}]}


def test_typescript_is_pinned_for_untrusted_roots_and_only_trusted_layers_change_pins(
        workspace: Path, xdg_config: Path) -> None:
    pin = "initialization_options.tsserver.path"
    defaults = load_config(workspace_roots=[workspace]).config.servers["typescript-language-server"]
    assert defaults.pin_untrusted == {pin: "node_modules/typescript/lib/tsserver.js"}
    project = project_file(workspace, f'[server.typescript-language-server.pin_untrusted]\n"{pin}" = ""\n')
    loaded = load_config(workspace_roots=[workspace])
    assert problem_lines(loaded) == [f"{project}: server.typescript-language-server.pin_untrusted: ignored: "
                                     f"workspace not trusted; run `lsp-hub trust {workspace}`"]
    assert loaded.config.servers["typescript-language-server"].pin_untrusted == defaults.pin_untrusted
    project.unlink()
    user_file(xdg_config, f'[server.typescript-language-server.pin_untrusted]\n"{pin}" = ""\n'
                          '"settings.typescript.tsdk" = "node_modules/typescript/lib"\n')
    mine = load_config(workspace_roots=[workspace])
    assert mine.problems == []
    assert mine.config.servers["typescript-language-server"].pin_untrusted == {
        pin: "", "settings.typescript.tsdk": "node_modules/typescript/lib"}


def test_trusted_project_may_set_commands_and_add_servers(workspace: Path, xdg_config: Path) -> None:
    project_file(workspace, UNTRUSTED_PROJECT)
    store = TrustStore()
    assert store.path == xdg_config / "lsp-hub" / "trusted.json"
    store.add(workspace)
    loaded = load_config(workspace_roots=[workspace])
    assert loaded.problems == []
    ruff = loaded.config.servers["ruff"]
    assert (ruff.command, ruff.args, ruff.env) == ("/tmp/evil", ("--pwn",), {"LD_PRELOAD": "/tmp/evil.so"})
    assert loaded.config.servers["evil"].command == "/tmp/evil"
    assert workspace in loaded.trusted_roots


def test_trust_of_a_parent_directory_covers_the_workspace(tmp_path: Path, workspace: Path) -> None:
    project_file(workspace, '[server.ruff]\ncommand = "my-ruff"\n')
    store = TrustStore(tmp_path / "trust.json")
    store.add(tmp_path)
    loaded = load_config(workspace_roots=[workspace], trust_store=store)
    assert loaded.problems == []
    assert loaded.config.servers["ruff"].command == "my-ruff"


@pytest.mark.parametrize("options", [{"trust_workspace": True}, {"trustWorkspace": True},
                                     {"hub": {"trust_workspace": True}}])
def test_the_editor_can_trust_the_workspace_for_the_session(workspace: Path, xdg_config: Path,
                                                            options: dict[str, object]) -> None:
    project_file(workspace, '[server.ruff]\ncommand = "my-ruff"\n')
    loaded = load_config(workspace_roots=[workspace], init_options=options)
    assert loaded.problems == []
    assert loaded.config.servers["ruff"].command == "my-ruff"
    assert loaded.config.hub.trust_workspace is True
    assert workspace in loaded.trusted_roots
    assert not (xdg_config / "lsp-hub" / "trusted.json").exists()  # session only, nothing recorded


def test_client_options_are_trusted_to_set_commands(workspace: Path) -> None:
    loaded = load_config(workspace_roots=[workspace], init_options={
        "server": {"mine": {"command": "my-server", "args": ["--stdio"]}},
        "language": {"python": {"servers": ["mine"]}},
    })
    assert loaded.problems == []
    assert loaded.config.servers["mine"].args == ("--stdio",)
    assert loaded.config.languages["python"].servers == ("mine",)
    assert loaded.trusted_roots == frozenset()  # trusting the client's options does not trust the workspace


def test_each_root_is_judged_on_its_own(tmp_path: Path) -> None:
    trusted_root, untrusted_root = tmp_path / "mine", tmp_path / "cloned"
    trusted_root.mkdir()
    untrusted_root.mkdir()
    project_file(trusted_root, '[server.clangd]\nargs = ["--background-index"]\n')
    project_file(untrusted_root, '[server.gopls]\nargs = ["-rpc.trace"]\ndisabled = true\n')
    store = TrustStore(tmp_path / "trust.json")
    store.add(trusted_root)
    loaded = load_config(workspace_roots=[trusted_root, untrusted_root], trust_store=store)
    assert [problem.key for problem in loaded.problems] == ["server.gopls.args"]
    assert loaded.config.servers["clangd"].args == ("--background-index",)
    assert loaded.config.servers["gopls"].args == ()
    assert loaded.config.servers["gopls"].disabled
    assert trusted_root in loaded.trusted_roots and untrusted_root not in loaded.trusted_roots


def test_symlinked_root_reports_both_spellings_as_trusted(tmp_path: Path, workspace: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(workspace)
    store = TrustStore(tmp_path / "trust.json")
    store.add(workspace)
    loaded = load_config(workspace_roots=[link], trust_store=store)
    assert {link, workspace} <= loaded.trusted_roots


def test_corrupt_trust_file_is_reported_not_fatal(tmp_path: Path, workspace: Path) -> None:
    trust_path = tmp_path / "trust.json"
    trust_path.write_text("{not json")
    project_file(workspace, '[server.ruff]\ncommand = "x"\n')
    loaded = load_config(workspace_roots=[workspace], trust_store=TrustStore(trust_path))
    sources = {problem.source for problem in loaded.problems}
    assert str(trust_path) in sources
    assert loaded.config.servers["ruff"].command == "ruff"  # treated as empty: nothing trusted



# ==================================================================================================== unsafe files
# A cloned repository chooses what sits at `.lsp-hub.toml`. Loading runs in a daemon thread here so that a
# regression (a read that blocks on a FIFO) fails the test instead of hanging it.
def load_within(seconds: float, **options: Any) -> LoadedConfig:
    outcome: list[LoadedConfig] = []
    reader = threading.Thread(target=lambda: outcome.append(load_config(**options)), daemon=True)
    reader.start()
    reader.join(seconds)
    assert outcome, f"load_config did not return within {seconds} s"
    return outcome[0]


VALID_PROJECT = '[server.ruff]\ndisabled = true\n'


def assert_only_problem(loaded: LoadedConfig, source: Path, message: str) -> None:
    assert problem_lines(loaded) == [f"{source}: {message}; file ignored"]
    assert loaded.config.servers["ruff"].command == "ruff"  # defaults still apply


def test_a_project_file_that_is_a_fifo_is_ignored_not_waited_on(workspace: Path) -> None:
    os.mkfifo(workspace / ".lsp-hub.toml")
    loaded = load_within(5, workspace_roots=[workspace])
    assert_only_problem(loaded, workspace / ".lsp-hub.toml", "is a FIFO, not a regular file")
    assert [layer.status for layer in loaded.layers if layer.kind == "project"] == ["refused"]


def test_a_project_file_linked_to_dev_zero_is_never_read(workspace: Path) -> None:
    (workspace / ".lsp-hub.toml").symlink_to("/dev/zero")
    loaded = load_within(5, workspace_roots=[workspace])
    assert_only_problem(loaded, workspace / ".lsp-hub.toml", "is a symbolic link to /dev/zero, outside the workspace")


def test_a_project_file_is_followed_only_to_a_file_inside_its_workspace(tmp_path: Path, workspace: Path) -> None:
    (workspace / "config").mkdir()
    (workspace / "config" / "hub.toml").write_text(VALID_PROJECT)
    (workspace / ".lsp-hub.toml").symlink_to("config/hub.toml")
    loaded = load_config(workspace_roots=[workspace])
    assert loaded.problems == [] and loaded.config.servers["ruff"].disabled
    outside = tmp_path / "outside.toml"
    outside.write_text(VALID_PROJECT)
    (workspace / ".lsp-hub.toml").unlink()
    (workspace / ".lsp-hub.toml").symlink_to(outside)
    loaded = load_config(workspace_roots=[workspace])
    assert_only_problem(loaded, workspace / ".lsp-hub.toml", f"is a symbolic link to {outside}, outside the workspace")
    assert not loaded.config.servers["ruff"].disabled


def test_a_project_file_over_one_megabyte_is_not_read(workspace: Path) -> None:
    project = workspace / ".lsp-hub.toml"
    with project.open("wb") as file:
        file.truncate(37 * 1024 * 1024)  # sparse: 37 MB of NUL bytes the old reader read whole
    assert_only_problem(load_within(5, workspace_roots=[workspace]), project, "is 37.0 MB, over the 1 MB limit")
    project.write_text("# " + "x" * (1024 * 1024 - 3) + "\n")  # exactly the limit
    assert load_config(workspace_roots=[workspace]).problems == []


@pytest.mark.parametrize(("text", "reason"), [
    ("a = " + "[" * 100_000 + "]" * 100_000 + "\n", "nests deeper than 100 levels"),
    ("a = " + "{b = " * 101 + "1" + "}" * 101 + "\n", "nests deeper than 100 levels"),
    ("a" + ".b" * 100_000 + " = 1\n", "has a dotted key of more than 20 parts"),
])
def test_a_project_file_nested_too_deeply_is_refused_with_its_name(workspace: Path, text: str, reason: str) -> None:
    project = project_file(workspace, text)
    assert_only_problem(load_within(10, workspace_roots=[workspace]), project, reason)


def test_nesting_is_counted_outside_strings_and_comments_and_up_to_the_limit(workspace: Path) -> None:
    project_file(workspace, (
        'a = "[[[[{{{{" # [[[[[[\n'
        "b = '[[[[{{{{'\n"
        'c = """\\"""[[[[ {{{{\n"""\n'
        "d = '''[[[[ {{{{'''\n"
        f"e = {'[' * 100}{']' * 100}\n"
        f"{'.'.join(['f'] * 20)} = 1.5\n"
        f"[server.ruff]\ndisabled = true\n"))
    loaded = load_config(workspace_roots=[workspace])
    assert loaded.config.servers["ruff"].disabled
    assert all("unknown key" in problem.message for problem in loaded.problems), problem_lines(loaded)


def test_a_project_file_that_is_not_utf8_or_a_directory_is_refused(workspace: Path) -> None:
    project = workspace / ".lsp-hub.toml"
    project.write_bytes(b"[server.ruff]\ndisabled = true\n# caf\xe9\n")
    assert_only_problem(load_config(workspace_roots=[workspace]), project,
                        "is not UTF-8 text (byte 0xe9 at offset 35)")
    project.unlink()
    project.mkdir()
    assert_only_problem(load_config(workspace_roots=[workspace]), project, "is a directory, not a regular file")


def test_the_user_file_and_cli_config_are_read_only_when_regular(tmp_path: Path, workspace: Path) -> None:
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    loaded = load_within(5, workspace_roots=[workspace], user_config_path=fifo)
    assert_only_problem(loaded, fifo, "is a FIFO, not a regular file")
    loaded = load_within(5, workspace_roots=[workspace], cli_config=fifo)
    assert_only_problem(loaded, fifo, "is a FIFO, not a regular file")
    # The user's own files may be links anywhere (dotfile repositories): only what they lead to is checked.
    real = tmp_path / "dotfiles" / "lsp-hub.toml"
    real.parent.mkdir()
    real.write_text(VALID_PROJECT)
    linked = tmp_path / "linked.toml"
    linked.symlink_to(real)
    assert load_config(workspace_roots=[workspace], user_config_path=linked).config.servers["ruff"].disabled
    zero = tmp_path / "zero.toml"
    zero.symlink_to("/dev/zero")
    assert_only_problem(load_within(5, workspace_roots=[workspace], cli_config=zero), zero,
                        "is a character device, not a regular file")


def test_client_options_nested_too_deeply_are_ignored(workspace: Path) -> None:
    deep: list[Any] = []
    for _ in range(1000):
        deep = [deep]
    loaded = load_config(workspace_roots=[workspace], init_options={"server": {"ruff": {"settings": {"x": deep}}}})
    assert problem_lines(loaded) == [f"{CLIENT_SOURCE}: nests deeper than 100 levels; ignored"]


# ==================================================================================================== claims
def test_an_untrusted_project_cannot_take_an_extension_from_a_trusted_language(workspace: Path,
                                                                             xdg_config: Path) -> None:
    user_file(xdg_config, '[language.python]\nfilenames = ["SConstruct"]\n')
    project = project_file(workspace, """
[language.evil]
extensions = ["py", "evil"]
language_ids = ["python"]
filenames = ["SConstruct"]
servers = ["ruff"]
""")
    loaded = load_config(workspace_roots=[workspace])
    assert problem_lines(loaded) == [
        f"{project}: language.evil.extensions: extension .py belongs to python; "
        "an untrusted workspace cannot reassign it",
        f"{project}: language.evil.language_ids: language id python belongs to python; "
        "an untrusted workspace cannot reassign it",
        f"{project}: language.evil.filenames: file name SConstruct belongs to python; "
        "an untrusted workspace cannot reassign it",
    ]
    config = loaded.config
    assert config.languages["python"].extensions == ("py", "pyi")
    assert config.languages["evil"].extensions == ("evil",)  # an extension nobody had is the project's to give
    for path in ("/w/a.py", "/w/SConstruct"):
        language = config.language_for(language_id=None, path=path)
        assert language is not None and language.name == "python"


def test_a_trusted_project_may_still_reassign_an_extension(tmp_path: Path, workspace: Path) -> None:
    store = TrustStore(tmp_path / "trust.json")
    store.add(workspace)
    project_file(workspace, '[language.snake]\nextensions = ["py"]\nservers = ["ruff"]\n')
    loaded = load_config(workspace_roots=[workspace], trust_store=store)
    assert loaded.problems == []
    language = loaded.config.language_for(language_id=None, path="/w/a.py")
    assert language is not None and language.name == "snake"


def test_python_and_rust_are_guarded_for_untrusted_roots_and_a_project_cannot_lift_it(
        workspace: Path, xdg_config: Path) -> None:
    servers = load_config(workspace_roots=[workspace]).config.servers
    assert servers["basedpyright"].pin_untrusted_programs == {"settings.python.pythonPath": ("python3", "python")}
    assert servers["basedpyright"].untrusted_venv_packages == "settings.python.analysis.extraPaths"
    assert servers["rust-analyzer"].trusted_only is True
    project = project_file(workspace, '[server.basedpyright]\npin_untrusted_programs = {}\n'
                                      'untrusted_venv_packages = ""\n'
                                      '[server.rust-analyzer]\ntrusted_only = false\n')
    loaded = load_config(workspace_roots=[workspace])
    hint = f"ignored: workspace not trusted; run `lsp-hub trust {workspace}`"
    assert problem_lines(loaded) == [f"{project}: server.basedpyright.pin_untrusted_programs: {hint}",
                                     f"{project}: server.basedpyright.untrusted_venv_packages: {hint}",
                                     f"{project}: server.rust-analyzer.trusted_only: {hint}"]
    guarded = loaded.config.servers["basedpyright"]
    assert guarded.pin_untrusted_programs == servers["basedpyright"].pin_untrusted_programs
    assert loaded.config.servers["rust-analyzer"].trusted_only is True


def test_the_json_server_is_kept_from_schema_urls_in_untrusted_roots_and_a_project_cannot_lift_it(
        workspace: Path, xdg_config: Path) -> None:
    servers = load_config(workspace_roots=[workspace]).config.servers
    pinned = {"initialization_options.handledSchemaProtocols": ["file"]}
    assert servers["vscode-json-language-server"].pin_untrusted_values == pinned
    project = project_file(workspace, '[server.vscode-json-language-server.pin_untrusted_values]\n'
                                      '"initialization_options.handledSchemaProtocols" = ["file", "http"]\n')
    loaded = load_config(workspace_roots=[workspace])
    hint = f"ignored: workspace not trusted; run `lsp-hub trust {workspace}`"
    assert problem_lines(loaded) == [f"{project}: server.vscode-json-language-server.pin_untrusted_values: {hint}"]
    assert loaded.config.servers["vscode-json-language-server"].pin_untrusted_values == pinned

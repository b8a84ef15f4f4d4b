//! Zed extension that registers `lsp-hub` as a language server. Zed only starts servers that Zed or an
//! extension registers; this one finds `lsp-hub` (settings `lsp.lsp-hub.binary`, else PATH) and passes the
//! `lsp.lsp-hub.initialization_options` through.
use zed_extension_api::{self as zed, settings::LspSettings, LanguageServerId, Result, Worktree};

struct LspHubExtension;

impl zed::Extension for LspHubExtension {
    fn new() -> Self {
        LspHubExtension
    }

    fn language_server_command(&mut self, _id: &LanguageServerId, worktree: &Worktree) -> Result<zed::Command> {
        let binary = LspSettings::for_worktree("lsp-hub", worktree).ok().and_then(|settings| settings.binary);
        let configured_path = binary.as_ref().and_then(|binary| binary.path.clone());
        let command = match configured_path {
            Some(path) => worktree.which(&path).unwrap_or(path),
            None => worktree
                .which("lsp-hub")
                .ok_or_else(|| "lsp-hub is not on PATH: install it (pip install lsp-hub) or set lsp.lsp-hub.binary.path".to_string())?,
        };
        let args = binary.and_then(|binary| binary.arguments).unwrap_or_default();
        Ok(zed::Command { command, args, env: worktree.shell_env() })
    }

    fn language_server_initialization_options(
        &mut self,
        _id: &LanguageServerId,
        worktree: &Worktree,
    ) -> Result<Option<zed::serde_json::Value>> {
        Ok(LspSettings::for_worktree("lsp-hub", worktree).ok().and_then(|settings| settings.initialization_options))
    }
}

zed::register_extension!(LspHubExtension);

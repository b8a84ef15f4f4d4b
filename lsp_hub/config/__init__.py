"""Configuration: schema, layered loading, workspace trust."""

from lsp_hub.config.model import Config, HubOptions, LanguageSpec, ServerSpec

__all__ = ["Config", "HubOptions", "LanguageSpec", "ServerSpec"]

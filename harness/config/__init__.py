"""Every scenario and suite schema and its loading (docs/architecture.md, "The folders")."""

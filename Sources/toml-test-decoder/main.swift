import TocsinConfig
// Owned by the TOML helper.

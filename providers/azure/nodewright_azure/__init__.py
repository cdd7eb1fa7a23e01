"""The Azure provider for nodewright (in progress; not yet registered as a plugin)."""

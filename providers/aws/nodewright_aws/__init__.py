"""The AWS EC2 provider for nodewright (in progress; not yet registered as a plugin)."""

"""Campaigns over many machines: Ray tasks, shards and their merge."""

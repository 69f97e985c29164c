"""The known-failure ledger: entries, their predicates, classification during a campaign, bisect over releases."""

"""Render receipts for people: markdown tables a reviewer can paste into a PR, and PNG plots."""

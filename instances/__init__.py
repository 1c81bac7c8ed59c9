"""Shipped MIL data sets (package data): see manifest.json."""

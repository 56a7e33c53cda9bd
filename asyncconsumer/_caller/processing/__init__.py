"""Concurrent processing with commits that cover only finished work (issue 34): a sans-I/O core and its drivers."""

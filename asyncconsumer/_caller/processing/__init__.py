"""Concurrent processing with commits that cover only finished work (issue 34): the caller side's engine."""

"""State shared by the caller's thread and the background thread, each field marked with who may read or write it.

Private: nothing here is public API.
"""

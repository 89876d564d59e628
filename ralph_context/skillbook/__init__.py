"""ACE skillbooks: their file formats (``formats.py``) and the store's ``skill`` items kept
in step with one (``sync.py``)."""

"""Reproductions of the documents' results: one module per figure, each writing a table and a
plot (``python -m tailbound.experiments.<name> --out DIR``)."""

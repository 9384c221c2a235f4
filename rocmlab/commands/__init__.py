"""One module per ``rocmlab`` command (see :mod:`rocmlab.cli`)."""

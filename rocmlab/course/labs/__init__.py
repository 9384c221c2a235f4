"""One package per lab notebook: ``labs/NN-name.ipynb`` -> ``rocmlab.course.labs.labNN_name``.

Each package holds what only its lab uses (helpers, plots, kernels, puzzles, its graded task); what every lab
shares (the puzzle runner, the verdict element, progress, widgets, magics, the exercise workbench) stays in
``rocmlab.course``. A lab package never imports another lab's package (``tools/architecture.py`` checks it).
"""

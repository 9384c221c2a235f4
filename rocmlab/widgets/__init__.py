"""ipywidgets front ends. Each widget lives in its own module; import it from there.

- :func:`rocmlab.widgets.doctor.doctor_widget`: the doctor's checks as a table with a re-run button
"""

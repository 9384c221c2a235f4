"""ipywidgets front ends. Each widget lives in its own module; import it from there.

- :func:`rocmlab.widgets.doctor.doctor_widget`: the doctor's checks as a table with a re-run button
- :class:`rocmlab.widgets.occupancy.OccupancyExplorer`: sliders -> waves per SIMD (plotly FigureWidget), limiting resource named
- :func:`rocmlab.widgets.indexing.indexing_widget`: which thread handles which element (grid/block/wavefront/lane)
- :mod:`rocmlab.widgets.inspector`: kernel resources and the highlighted ISA as HTML
"""

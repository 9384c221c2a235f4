"""ipywidgets front ends. Each widget lives in its own module; import it from there.

- :func:`rocmlab.course.widgets.doctor.doctor_widget`: the doctor's checks as a table with a re-run button
- :class:`rocmlab.course.widgets.occupancy.OccupancyExplorer`: sliders -> waves per SIMD (plotly FigureWidget), limiting resource named
- :func:`rocmlab.course.widgets.indexing.indexing_widget`: which thread handles which element (grid/block/wavefront/lane)
- :mod:`rocmlab.course.widgets.inspector`: kernel resources and the highlighted ISA as HTML
- :func:`rocmlab.course.widgets.roofline.roofline_widget`: roofline with measured points and an intensity slider
- :func:`rocmlab.course.widgets.timeline.kernel_table_widget`: kernel table plus per-stream timeline
- :func:`rocmlab.course.widgets.monitor.monitor_widget`: live GPU/CPU monitor (amdsmi, nvidia-ml-py, psutil)
- :func:`rocmlab.course.widgets.progress.progress_widget`: the learner's points per lab task and exercise (Lab 00)
- :func:`rocmlab.course.widgets.grader.edit_and_grade`: the one edit-a-file, Grade-again loop (Labs 01, 02, exercises)
"""

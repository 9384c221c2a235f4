"""Lab 08, the MI300X package: the package model widget (``package_widget``), the remap kernels (``kernels``) and its graded task, the XCD remap (``task``)."""

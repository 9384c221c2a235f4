"""Lab 02, porting CUDA to HIP: the port's notebook view (``port_view``) and a mechanically hipified kernel fixed step by step (``hipify_steps``)."""

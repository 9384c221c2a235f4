"""Lab 05, QuickReduce tuning: its plots (``plots``) and its graded task, a codec per message (``task``)."""

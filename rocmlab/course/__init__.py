"""What only the notebooks need: lab helpers, puzzles and widgets. The only rocmlab modules that may
import IPython, ipywidgets or plotly; toolkit modules never import this package."""

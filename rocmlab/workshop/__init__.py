"""A workshop on one machine or a cluster: GPU seats per learner (:mod:`.seats`), the hand-in exchange
(:mod:`.exchange`), and a JupyterHub started and stopped from Python (:mod:`.hub`, used by the tests and
``benchmarks/hub_load.py``), whose writes into learners' homes go through :mod:`.learner_space`. :mod:`.seats` and :mod:`.exchange` import only the standard library at import
time, so a hub's own environment can load them (``pip install --no-deps``) without torch.
"""

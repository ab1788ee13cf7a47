"""A synthetic NIST SD19: same trees, names and formats as the real database, any scale.

The real SD19 (814,255 characters, ~1 GB per hierarchy) cannot be downloaded on development or CI machines, so every
reader, index and builder is tested on this replica.  It follows the layout of ``docs/sd19.md`` exactly (hierarchies,
folder and file names, both editions, NIST's published writer and class counts scaled by ``scale``, the three duplicated
digits), or with ``layout=`` a QMNIST/xnist table the real digit layout; what it writes is described in
``docs/synthetic-sd19.md``.

Characters are drawn by :mod:`mnistforge.sd19.glyphs`.  Output is a pure function of the configuration (byte-identical
zips for the same seed); rendering and PNG encoding run on all cores, one task per group of writer folders, and the
results are written in walk order.

>>> import tempfile
>>> out = synthesize_sd19(tempfile.mkdtemp() + "/sd19",
...                       SynthConfig(scale=0.0005, fields="d", hierarchies=("by_write",)))
>>> sorted(p.name for p in out.iterdir())
['by_write.zip', 'synthetic-sd19.json']
"""
from .config import DESCRIPTION, HIERARCHIES, PLAN_DTYPE, SynthConfig
from .plan import Plan, field_class_counts, plan_sd19, read_xnist_table
from .synthesize import synthesize_sd19

__all__ = ["SynthConfig", "synthesize_sd19", "plan_sd19", "read_xnist_table", "field_class_counts",
           "Plan", "HIERARCHIES", "PLAN_DTYPE", "DESCRIPTION"]

"""Suite-wide settings: the on-disk compile cache (``intent_eqsat.compile_cache``) is off, so no test reads a
kernel another test (or a stand-in optimizer) stored, and nothing is written under the user's home; the cache's
own tests pass ``cache=<tmp folder>``. Size bucket planning (``intent_eqsat.optimizer.size_buckets``) is off too: it
adds 30-70% to every compile without sizes and leaves the general kernel as it was; its own tests
(``test_size_buckets.py``) turn it on."""
import os

os.environ["INTENT_EQSAT_CACHE"] = "off"
os.environ["INTENT_EQSAT_SIZE_BUCKETS"] = "off"

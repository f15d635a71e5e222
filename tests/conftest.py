"""Suite-wide settings: the on-disk compile cache (``intent_eqsat.compile_cache``) is off, so no test reads a
kernel another test (or a stand-in optimizer) stored, and nothing is written under the user's home; the cache's
own tests pass ``cache=<tmp folder>``."""
import os

os.environ["INTENT_EQSAT_CACHE"] = "off"

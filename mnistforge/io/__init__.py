"""io: file formats and primitives that know no dataset (open, hash, write atomically, describe)."""

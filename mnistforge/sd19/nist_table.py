"""NIST's published SD19 counts (user guide tables), shared by the readers and the synthesiser.

Numbers from NIST's SD19 user guides as gathered in the project spec: per partition (writer id range, origin, per-field
counts) and per class over all partitions and fields.

>>> PARTITIONS[4].digits
58646
>>> sum(p.total for p in PARTITIONS.values())
814255
>>> CLASS_TOTALS[ord("O")]
29139
"""
from __future__ import annotations

import dataclasses

__all__ = [
    "Partition", "PARTITIONS", "PARTITION_ORDER", "FIELDS", "FIELD_NAMES", "FIELD_DIRS", "CLASS_TOTALS", "DIGITS",
    "UPPERS", "LOWERS", "ALL_CLASSES", "MERGED_LETTERS", "TOTAL_CHARACTERS", "TOTAL_DIGITS", "DIGIT_WRITERS",
    "DUPLICATE_DIGITS", "class_hex", "field_counts", "merge_class",
]


@dataclasses.dataclass(frozen=True)
class Partition:
    """One ``hsf_N`` partition of SD19 as published by NIST."""

    number: int
    first_writer: int
    last_writer: int       # inclusive
    origin: str
    digits: int
    uppers: int
    lowers: int
    const: int             # constitution field (0 where the field does not exist)

    @property
    def name(self) -> str:
        return f"hsf_{self.number}"

    @property
    def total(self) -> int:
        return self.digits + self.uppers + self.lowers + self.const

    @property
    def writer_ids(self) -> range:
        return range(self.first_writer, self.last_writer + 1)

    def count(self, field: str) -> int:
        """Published count for field ``'d'``, ``'u'``, ``'l'`` or ``'c'``."""
        return {"d": self.digits, "u": self.uppers, "l": self.lowers, "c": self.const}[field]


PARTITIONS: dict[int, Partition] = {
    0: Partition(0, 0, 499, "Census field", 53449, 10790, 10968, 99208),
    1: Partition(1, 500, 999, "Census field", 53312, 10662, 10784, 87965),
    2: Partition(2, 1000, 1499, "Census field", 52467, 10863, 10883, 61570),
    3: Partition(3, 1500, 2099, "Census field", 63896, 12636, 12678, 0),
    4: Partition(4, 2100, 2599, "high school", 58646, 11941, 12000, 0),
    6: Partition(6, 3100, 3599, "Census MD", 61094, 12479, 12205, 0),
    7: Partition(7, 3600, 4099, "Census MD", 60089, 12092, 11578, 0),
}
#: Walk order of partitions (hsf_5 withheld by NIST, hsf_8 has pages only).
PARTITION_ORDER = (0, 1, 2, 3, 4, 6, 7)

#: Field letters in the order they are walked within a writer folder.
FIELDS = ("d", "u", "l", "c")
FIELD_NAMES = {"d": "digits", "u": "uppers", "l": "lowers", "c": "const"}
#: Folder names of the fields in the by_field hierarchy.
FIELD_DIRS = {"d": "digit", "u": "upper", "l": "lower", "c": "const"}

TOTAL_CHARACTERS = 814255
TOTAL_DIGITS = 402953
#: Writers with digits per partition in the QMNIST digit table (3,580 digit folders).
DIGIT_WRITERS = {0: 500, 1: 498, 2: 497, 3: 586, 4: 500, 6: 499, 7: 499}
#: Exactly this many digit images in SD19 are exact copies of an earlier one.
DUPLICATE_DIGITS = 3

_DIGIT_TOTALS = [40363, 44704, 40072, 41112, 39154, 36606, 39937, 41893, 39579, 39533]
_UPPER_TOTALS = [7469, 4526, 11833, 5341, 5785, 10622, 2964, 3673, 13994, 4388, 2850, 5886, 10487, 9588, 29139, 9744,
                 3018, 5882, 24272, 11396, 14604, 5433, 5501, 3203, 5541, 3165]
_LOWER_TOTALS = [11677, 6012, 3286, 11860, 28723, 2961, 4276, 10217, 3152, 2213, 2957, 17853, 3109, 13316, 3215, 2816,
                 3499, 16425, 3136, 21227, 3312, 3378, 3164, 3292, 2746, 3176]

DIGITS = tuple(range(0x30, 0x3A))
UPPERS = tuple(range(0x41, 0x5B))
LOWERS = tuple(range(0x61, 0x7B))
ALL_CLASSES = DIGITS + UPPERS + LOWERS

#: Published total per class (ASCII code -> count) over all partitions and fields.
CLASS_TOTALS: dict[int, int] = {
    **dict(zip(DIGITS, _DIGIT_TOTALS)), **dict(zip(UPPERS, _UPPER_TOTALS)), **dict(zip(LOWERS, _LOWER_TOTALS)),
}
assert sum(CLASS_TOTALS.values()) == TOTAL_CHARACTERS
assert sum(_DIGIT_TOTALS) == TOTAL_DIGITS == sum(p.digits for p in PARTITIONS.values())

#: Letters whose upper and lower case share one folder in by_merge.
MERGED_LETTERS = "CIJKLMOPSUVWXYZ"


def class_hex(code: int) -> str:
    """NIST's folder name for an ASCII code: lower-case 2-digit hex (``0x4a`` -> ``'4a'``)."""
    return f"{int(code):02x}"


def merge_class(code: int) -> int:
    """The by_merge class of an ASCII code (merged lower-case letters map to upper case)."""
    ch = chr(code)
    return ord(ch.upper()) if ch.islower() and ch.upper() in MERGED_LETTERS else int(code)


def field_counts() -> dict[tuple[int, str], int]:
    """Published ``{(partition, field): count}`` for fields that exist (const only hsf_0..2)."""
    return {(n, f): p.count(f) for n, p in PARTITIONS.items() for f in FIELDS if p.count(f)}

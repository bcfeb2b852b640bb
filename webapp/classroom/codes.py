"""Join codes: short, read easily off a projector, and too many to guess."""
from __future__ import annotations

import math
import secrets

# No 0/O, 1/l/I: each of these is read as the other from the back of a room.
ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
LENGTH = 7  # 31**7 codes: 34.7 bits, past the 30 a guesser would have to search
BITS = LENGTH * math.log2(len(ALPHABET))


def new_code() -> str:
    """A random code from ALPHABET (the caller checks it is not in use)."""
    return "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))


def normalize_code(typed: str) -> str:
    """What a student typed, as stored: capitals, spaces and dashes dropped (lower case is accepted)."""
    return "".join(ch for ch in typed.upper() if ch not in " -\t")


def looks_like_code(code: str) -> bool:
    return len(code) == LENGTH and all(ch in ALPHABET for ch in code)

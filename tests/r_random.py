"""R's default random numbers (``set.seed`` + Mersenne-Twister ``runif``), to rebuild the data
of sdcMicro tests that draw it with ``set.seed(3)``; R itself is not available here.

Port of R's RNG.c (R >= 3.6: kind "Mersenne-Twister"): ``set.seed(s)`` scrambles the seed with
50 rounds of the LCG ``s = 69069 s + 1`` (mod 2^32), fills the 625 seed words with further
rounds, and sets the MT position to 624; ``unif_rand`` is the tempered MT19937 output times
2.3283064365386963e-10. The sdcMicro tests' own expectations (the class sizes they imply)
confirm the port, see tests/test_risk_weights.py.
"""

from __future__ import annotations

MASK = 0xFFFFFFFF


class RRandom:
    """``RRandom(3).runif(10, 1, 4)`` is R's ``set.seed(3); runif(10, 1, 4)``."""

    def __init__(self, seed: int) -> None:
        s = seed & MASK
        for _ in range(50):
            s = (69069 * s + 1) & MASK
        words = []
        for _ in range(625):
            s = (69069 * s + 1) & MASK
            words.append(s)
        self.mt = words[1:]
        self.mti = 624

    def _next(self) -> int:
        mt = self.mt
        if self.mti >= 624:
            for k in range(624):
                y = (mt[k] & 0x80000000) | (mt[(k + 1) % 624] & 0x7FFFFFFF)
                mt[k] = mt[(k + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
            self.mti = 0
        y = mt[self.mti]
        self.mti += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        y ^= y >> 18
        return y

    def unif(self) -> float:
        u = self._next() * 2.3283064365386963e-10
        if u <= 0.0:  # R's fixup: strictly inside (0, 1)
            return 0.5 * 2.328306437080797e-10
        if 1.0 - u <= 0.0:
            return 1.0 - 0.5 * 2.328306437080797e-10
        return u

    def runif(self, n: int, low: float = 0.0, high: float = 1.0) -> list[float]:
        return [low + (high - low) * self.unif() for _ in range(n)]


def r_round(x: float) -> float:
    """R's ``round(x)`` for the values drawn here (ties, impossible in practice, to even)."""
    return float(round(x))

"""The settings `fclc tune` found, kept on disk per program, entry, argument shapes and device.

`Tuned` is the record: the best setting (parameter name -> value: `#BlockSize`,
`#NumGroups`, int arguments, an optional pass on or off), its median kernel time, the time of the setting the search
started from, the device and the arguments it ran on, and every trial.  `key(...)` says
what a record depends on; `keep` and `kept` store and read it (fcl.base.diskcache, folder
"tune"; FCL_NO_CACHE=1 switches it off).  Who searches: fcl.tools.tune; who reads:
`Program.tuned` and `fclc run` / `fclc bench`.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from fcl.base import diskcache

HARDWARE = {"#BlockSize": "block_size", "#NumGroups": "num_groups"}    # -> its compile option
PASSES = {"--pass double_buffer": "double_buffer"}      # an optional pass, on (1) or off (0) -> its name
KEEP = 256                     # records kept on disk


@dataclass
class Tuned:
    setting: dict
    seconds: float
    start_seconds: float
    device: str
    arguments: str
    trials: list = field(default_factory=list)

    @property
    def hardware(self) -> dict:
        """The compile options of the setting's hardware parameters and optional passes:
        block_size, num_groups, with_pass (where one is on)."""
        out = {HARDWARE[name]: v for name, v in self.setting.items() if name in HARDWARE}
        on = tuple(PASSES[name] for name, v in self.setting.items() if name in PASSES and v)
        return {**out, "with_pass": on} if on else out


def key(program_digest: bytes, entry: str, device: str, shapes: str) -> bytes:
    """What a record depends on: the program's declarations (the prelude's with them), the
    entry, the arguments' types and shapes, and the device."""
    return hashlib.sha256(program_digest + "\0".join([entry, device, shapes]).encode()).digest()


def keep(record_key: bytes, tuned: Tuned):
    if diskcache.enabled():
        diskcache.store(diskcache.entry_path("tune", record_key), tuned, KEEP)


def kept(record_key: bytes) -> Tuned | None:
    return diskcache.load(diskcache.entry_path("tune", record_key), Tuned) if diskcache.enabled() else None

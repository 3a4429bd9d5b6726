from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import overload


class State(enum.Enum):
    WAITING = "w"
    DONE = "d"


@dataclass(frozen=True)
class Job:
    id: str
    payload: bytes
    attempt: int = 0


class Keys:
    def __init__(self, queue: str) -> None:
        self.queue = queue


def make_owner() -> str:
    return "o"


class Queue:
    name: str

    def __init__(self, client: object, name: str) -> None:
        self.name = name
        self.client = client
        self.keys = Keys(name)
        self.owner = make_owner()

    async def push(self, id: str, payload: bytes | str, /) -> bool:
        return True

    async def push_batch(self, jobs: list[tuple[str, bytes]]) -> list[bool]:
        return []

    @overload
    async def get(self, id: str) -> Job | None: ...
    @overload
    async def get(self, id: str, default: Job) -> Job: ...
    async def get(self, id, default=None):
        return default

    @staticmethod
    def valid(name: str) -> bool:
        return True

    @classmethod
    def of(cls, client: object, *names: str) -> list[Queue]:
        return []


class Runner:
    """An overloaded constructor: one line per overload; the attributes come from the
    implementation, which sets them (the overloads' bodies are `...`)."""

    @overload
    def __init__(self, queue: Queue, every: int) -> None: ...
    @overload
    def __init__(self, queue: Queue, *, seconds: float) -> None: ...
    def __init__(self, queue: Queue, every: int | None = None, *, seconds: float | None = None):
        self.queue = queue
        self.every: int = every if every is not None else int((seconds or 1) * 1000)

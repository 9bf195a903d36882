"""Replace attributes of torch and put them back; patch modules that are imported later.

The wrapper constructors live in modules that cost a second or more to import (FSDP, tensor
parallel, ZeRO). Importing them eagerly in every rank would slow every run, so their patches wait
in a meta-path finder and are applied the moment the script imports the module, before any
`from ... import fully_shard` can bind the unpatched function.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

ModuleCallback = Callable[[ModuleType], None]


class _CallbackLoader(importlib.abc.Loader):
    """Delegates to the real loader, then runs the callbacks on the freshly executed module."""

    def __init__(self, loader: Any, on_loaded: Callable[[ModuleType], None]) -> None:
        self._loader = loader
        self._on_loaded = on_loaded

    def create_module(self, spec: Any) -> Optional[ModuleType]:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # Put the real loader back first so tracebacks and inspect see a normal module.
        module.__loader__ = self._loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        self._on_loaded(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _PostImportFinder(importlib.abc.MetaPathFinder):
    def __init__(self, patcher: "Patcher") -> None:
        self._patcher = patcher
        self._resolving: Set[str] = set()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in self._patcher._pending or fullname in self._resolving:
            return None
        self._resolving.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._resolving.discard(fullname)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _CallbackLoader(spec.loader, self._patcher._module_loaded)
        return spec


class Patcher:
    """Owns every replacement the monitor makes, so uninstalling restores torch exactly."""

    def __init__(self) -> None:
        self._replaced: List[Tuple[Any, str, Any]] = []
        # (original, replacement, attribute, module names that may re-export it)
        self._functions: List[Tuple[Any, Any, str, Sequence[str]]] = []
        self._pending: Dict[str, List[ModuleCallback]] = {}
        self._finder: Optional[_PostImportFinder] = None

    def replace(self, owner: Any, attr: str, make: Callable[[Any], Any]) -> bool:
        """Set `owner.attr = make(original)`; False when `owner` has no such attribute."""
        original = owner.__dict__.get(attr) if isinstance(owner, type) else getattr(owner, attr, None)
        if original is None:
            return False
        setattr(owner, attr, make(original))
        self._replaced.append((owner, attr, original))
        return True

    def replace_function(self, module: ModuleType, attr: str, make: Callable[[Any], Any],
                         reexports: Sequence[str]) -> bool:
        """Replace a module-level function and every already-imported re-export of it.

        Re-exporting modules imported afterwards copy the replacement by themselves.
        """
        original = getattr(module, attr, None)
        if original is None:
            return False
        replacement = make(original)
        self._functions.append((original, replacement, attr, (module.__name__, *reexports)))
        for name in (module.__name__, *reexports):
            holder = sys.modules.get(name)
            if holder is not None and getattr(holder, attr, None) is original:
                setattr(holder, attr, replacement)
        return True

    def when_imported(self, module_name: str, callback: ModuleCallback) -> None:
        module = sys.modules.get(module_name)
        if module is not None:
            callback(module)
            return
        self._pending.setdefault(module_name, []).append(callback)
        if self._finder is None:
            self._finder = _PostImportFinder(self)
            sys.meta_path.insert(0, self._finder)

    def _module_loaded(self, module: ModuleType) -> None:
        for callback in self._pending.pop(module.__name__, []):
            callback(module)

    def restore_all(self) -> None:
        if self._finder is not None:
            try:
                sys.meta_path.remove(self._finder)
            except ValueError:
                pass
            self._finder = None
        self._pending.clear()
        for original, replacement, attr, names in reversed(self._functions):
            for name in names:
                holder = sys.modules.get(name)
                if holder is not None and getattr(holder, attr, None) is replacement:
                    setattr(holder, attr, original)
        self._functions.clear()
        for owner, attr, original in reversed(self._replaced):
            setattr(owner, attr, original)
        self._replaced.clear()

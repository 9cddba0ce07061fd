"""The git layer's accelerators: code that exists for speed only, each module with its
contract and the plain path beside it named in its docstring. ``DATOM_PLAIN=1`` selects
every plain path (see :mod:`datom_core._plain`).

* :mod:`._index`: the clone's index patched entry by entry (plain: dulwich's update).
* :mod:`._tree`: big trees patched, another writer's read as an edit, what a tree was made
  from (plain: dulwich's serialiser and parser, trees compared entry by entry).
* :mod:`._packs`: the delta packer and the pack merge by copied entries (plain: whole
  objects, no delta search).
* :mod:`._walk`: the paths two commits differ in, from the names a tree was made with
  (plain: dulwich's ``tree_changes``; ``DATOM_PLAIN=walk`` selects it alone).
* :mod:`._history`: the commits of each path, kept as HEAD moves, and the log along
  first parents (plain: dulwich's walker; ``DATOM_PLAIN=history``).
* :mod:`._memo`: parsed trees and commits and blob bytes kept by id (plain: a store read
  each time; ``DATOM_PLAIN=trees``, ``commits``, ``blobs``).
* :mod:`._advert`: the last ref advertisement kept a few seconds, a write's tip and its
  push's (plain: a fetch per write, dulwich's ``send_pack`` asking its own;
  ``DATOM_PLAIN=advert`` selects it alone).
* :mod:`._compact`, :mod:`._held`: packs merged, a local remote compacted, git's metadata
  honoured (plain: dulwich's ``pack_loose_objects`` for a clone, nothing for a remote;
  ``DATOM_PLAIN=compact`` selects it alone).
* :mod:`._prime`: the push's ref advertisement read while a shallow clone fetches
  (plain: the first push asks for it).
* :mod:`._share`: a clone reads a local remote's objects in place, git's alternates
  (plain: it copies what it fetches; ``DATOM_PLAIN=share``).
* :mod:`._tipnote`: the clone's newest look at the remote's tip, shared by the writers
  of a group commit (plain: each looks itself; ``DATOM_PLAIN=group``, which also turns
  group commit off).
"""

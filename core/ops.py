"""Every registered op, built-in or from a plugin, as a function over Tensors.

This module is filled when plugins are loaded: ``plugrad.ops.<name>`` exists
for each registered op. Built-in ops are also in the top-level ``plugrad``
namespace; ops from third-party plugins live here only.
"""

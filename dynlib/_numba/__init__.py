"""numba's room: the compiled-code boundary (decorators, dyn's kernel cache, the one-call path, threads).

The floors above import compiled code through here (`dynlib.core.spatial.kernel` re-exports the
decorators); this is the only folder that knows numba's and llvmlite's insides.
"""

"""RL as a storage for ``limits``, the engine of flask-limiter and slowapi: importing
this module registers its URI schemes, so a limiter changes its storage URI only.

    import rl_client.limits  # registers rl://, rl+cluster://, async+rl://...
    limiter = Limiter(get_remote_address, app=app, storage_uri="rl://localhost:6379")

``limits``' fixed window runs on RL.FIXED, its moving window on RL.SLIDING and its
sliding window counter on RL.SLIDINGCOUNTER (the RL module or RL's Functions library,
found at the first call). Needs ``limits`` and redis-py (``pip install
rl-client[limits]``).
"""

from ._async import AsyncRLClusterStorage, AsyncRLStorage
from ._sync import RLClusterStorage, RLStorage

__all__ = ["RLStorage", "RLClusterStorage", "AsyncRLStorage", "AsyncRLClusterStorage"]

// ES module entry: the same objects as the CommonJS one (index.js).
import rl from './index.js';

export const {
  VERSION,
  createLimiter,
  RateLimiter,
  Pipeline,
  Lease,
  Decision,
  AllDecision,
  ThrottleDecision,
  Policy,
  policies,
  adapterFor,
  IORedisAdapter,
  NodeRedisAdapter,
  NodeRedisClusterAdapter,
  durationMs,
  RLError,
  RLServerError,
  RLArgumentError,
  RLWrongTypeError,
  RLOutOfMemoryError,
  RLNotLoadedError,
  RLUnsupportedError,
  RLConnectionError,
  RLLeaseRejectedError,
} = rl;
export default rl;

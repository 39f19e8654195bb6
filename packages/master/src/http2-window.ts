import type { Http2Server, Http2Session, Settings } from 'node:http2';
import type { Server } from '@edl/proto/grpc';

/** HTTP/2 receive window of the master's sessions and streams: a whole gradient in one go. */
export const MASTER_RECEIVE_WINDOW = 16 * 1024 * 1024;

/** The parts of a grpc-js `Server` (1.14) that hold its HTTP/2 settings and servers. */
interface GrpcServerInternals {
  commonServerOptions?: { settings?: Settings };
  http2Servers?: Map<Http2Server, unknown>;
}

/**
 * Gives a grpc-js server a large HTTP/2 receive window, before it binds. grpc-js has no server
 * option for it, and with HTTP/2's default 64 KiB a 220 KB gradient crosses in several
 * flow-control round trips. Each needs the sending worker's event loop, which is busy computing
 * the next step: the gradient then reaches the master only when that step is done, and the push
 * no longer overlaps compute. Returns a function to call after binding (for the connection-level
 * window, which is not a setting), or undefined when this grpc-js keeps its options elsewhere (the
 * master then works as before, with default windows).
 */
export function widenReceiveWindow(server: Server): (() => void) | undefined {
  const internals = server as unknown as GrpcServerInternals;
  const common = internals.commonServerOptions;
  if (common === undefined || typeof common !== 'object') return undefined;
  common.settings = { ...common.settings, initialWindowSize: MASTER_RECEIVE_WINDOW };
  return () => {
    for (const http2Server of internals.http2Servers?.keys() ?? []) {
      http2Server.on('session', (session: Http2Session) => {
        // A session whose socket is already gone cannot take the setting; nothing to widen then.
        try {
          session.setLocalWindowSize(MASTER_RECEIVE_WINDOW);
        } catch {}
      });
    }
  };
}

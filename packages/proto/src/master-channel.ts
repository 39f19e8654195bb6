import { ChannelCredentials, Client } from '@grpc/grpc-js';

/**
 * The gRPC channel to the master, shared by a client's transports: insecure (loopback, a cluster's
 * network), with the message limit both ways and the options every dispatch call pays for.
 */
export function createMasterChannel(address: string, maxMessageBytes: number): Client {
  return new Client(address, ChannelCredentials.createInsecure(), {
    'grpc.max_receive_message_length': maxMessageBytes,
    'grpc.max_send_message_length': maxMessageBytes,
    // Loopback and LAN calls are tiny and frequent: no need for the default connection backoff cap.
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': 2_000,
    // Channelz bookkeeping (call counters, traces) costs on every call and nothing reads it.
    'grpc.enable_channelz': 0,
    // Retries are the caller's (withRetries); grpc-js's own would keep a copy of every message
    // sent, a model-sized copy per gradient push.
    'grpc.enable_retries': 0,
    // A model comes back with every gradient: with HTTP/2's default 64 KiB window a 1 MB model
    // needs a dozen WINDOW_UPDATE round trips; a 16 MiB window takes it in one go.
    'grpc-node.flow_control_window': 16 * 1024 * 1024,
  });
}

// @edl/proto/grpc: @grpc/grpc-js, the one copy every @edl/* package uses. The published @edl/proto
// carries grpc-js inside its tarball without @grpc/proto-loader (31 packages, 6.8 MB, an install
// script): grpc-js loads that only for channelz and ORCA, which elasticdl-ts never enables. Only
// @edl/proto can then resolve grpc-js, so @edl/master and @edl/ps import it from here.
export * from '@grpc/grpc-js';

'use strict';
// Preloaded into the s3rver process (`node --require`) by s3rver-process.ts: registers the access key
// ids named in EDL_S3RVER_ACCESS_KEY_IDS (comma-separated) on s3rver's built-in account, so a test can
// serve credentials of its own (an STS endpoint's) and s3rver refuses every other id. s3rver checks the
// id, never the secret, so the secret registered here is not used.
const AWSAccount = require('s3rver/lib/models/account');

for (const accessKeyId of (process.env.EDL_S3RVER_ACCESS_KEY_IDS ?? '').split(',')) {
  if (accessKeyId !== '') AWSAccount.DUMMY_ACCOUNT.createKeyPair(accessKeyId, 'unchecked');
}

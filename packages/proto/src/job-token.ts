import { timingSafeEqual } from 'node:crypto';
import { checkNonEmptyString } from '@edl/common';
import type { Metadata } from '@grpc/grpc-js';
import { JOB_TOKEN_METADATA_KEY } from './grpc-service.js';

/**
 * A check of the job token a call carries in `x-edl-job-token`, in constant time (the token is
 * the job's only credential): true when the metadata holds exactly `token`.
 */
export function jobTokenCheck(token: string): (metadata: Metadata) => boolean {
  const expected = Buffer.from(checkNonEmptyString(token, 'token'), 'utf8');
  return (metadata) => {
    const value = metadata.get(JOB_TOKEN_METADATA_KEY)[0];
    if (value === undefined) return false;
    const given = Buffer.from(typeof value === 'string' ? value : value.toString('utf8'), 'utf8');
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
}

/** The details of the UNAUTHENTICATED status a call without the job token is refused with. */
export const WRONG_TOKEN_DETAILS = `missing or wrong job token in '${JOB_TOKEN_METADATA_KEY}'`;

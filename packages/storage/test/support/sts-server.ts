import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** Credentials the endpoint hands out for one AssumeRoleWithWebIdentity call. */
export interface IssuedCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string;
  /** How long after the call they expire, in ms. */
  readonly expiresInMs: number;
}

/** One AssumeRoleWithWebIdentity call the endpoint answered, as the SDK sent it. */
export interface WebIdentityCall {
  readonly webIdentityToken: string;
  readonly roleArn: string;
  readonly roleSessionName: string;
  /** The access key id it answered with. */
  readonly issuedAccessKeyId: string;
}

/**
 * A small STS endpoint (node:http on 127.0.0.1) for the AWS SDK's web-identity provider
 * (`AWS_ENDPOINT_URL_STS`): it answers the query-protocol `AssumeRoleWithWebIdentity` POST with the
 * XML AWS sends, handing out {@link issue}d credentials in order (the last one again when they run
 * out), and records each call. Any other action gets STS's 400 `InvalidAction`.
 */
export class StsServer {
  /** Every AssumeRoleWithWebIdentity call, in order. */
  readonly calls: WebIdentityCall[] = [];
  private queue: IssuedCredentials[] = [];

  private constructor(
    private readonly server: Server,
    /** `http://127.0.0.1:<port>`. */
    readonly origin: string,
  ) {}

  static async start(): Promise<StsServer> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const sts = new StsServer(server, `http://127.0.0.1:${address.port}`);
    server.on('request', (request, response) => {
      sts.answer(request, response).catch((error: unknown) => response.destroy(error as Error));
    });
    return sts;
  }

  /** The credentials of the next calls, in order. */
  issue(...credentials: IssuedCredentials[]): void {
    this.queue = [...credentials];
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, 'close');
  }

  private async answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    let body = '';
    for await (const chunk of request) body += String(chunk);
    const form = new URLSearchParams(body);
    const issued = this.queue.length > 1 ? this.queue.shift() : this.queue[0];
    if (request.method !== 'POST' || form.get('Action') !== 'AssumeRoleWithWebIdentity' || !issued) {
      response
        .writeHead(400, { 'content-type': 'text/xml' })
        .end(
          '<ErrorResponse><Error><Type>Sender</Type><Code>InvalidAction</Code>' +
            '<Message>only AssumeRoleWithWebIdentity is served</Message></Error></ErrorResponse>',
        );
      return;
    }
    const roleSessionName = form.get('RoleSessionName') ?? '';
    this.calls.push({
      webIdentityToken: form.get('WebIdentityToken') ?? '',
      roleArn: form.get('RoleArn') ?? '',
      roleSessionName,
      issuedAccessKeyId: issued.accessKeyId,
    });
    const expiration = new Date(Date.now() + issued.expiresInMs).toISOString();
    response.writeHead(200, { 'content-type': 'text/xml' }).end(
      `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>system:serviceaccount:default:edl-worker</SubjectFromWebIdentityToken>
    <Audience>sts.amazonaws.com</Audience>
    <AssumedRoleUser>
      <Arn>arn:aws:sts::123456789012:assumed-role/edl-test/${roleSessionName}</Arn>
      <AssumedRoleId>AROAEDLTEST:${roleSessionName}</AssumedRoleId>
    </AssumedRoleUser>
    <Credentials>
      <AccessKeyId>${issued.accessKeyId}</AccessKeyId>
      <SecretAccessKey>${issued.secretAccessKey}</SecretAccessKey>
      <SessionToken>${issued.sessionToken}</SessionToken>
      <Expiration>${expiration}</Expiration>
    </Credentials>
    <Provider>oidc.eks.test</Provider>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>edl-test-${this.calls.length}</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>`,
    );
  }
}

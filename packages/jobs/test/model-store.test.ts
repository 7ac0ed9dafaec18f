// Where a base model id points, as locateBaseModel decides it: only an owner/name id is asked of the hub, and a hub
// that cannot answer for an id is not asked about it again for a minute (each client retry would wait for it again).
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceUnavailable, UnprocessableEntity } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { locateBaseModel } from '../src/models/model-store.ts';

let platform: TestPlatform;
let hub: net.Server;
/** Connections the stand-in hub took: each is dropped at once, as a hub that is down behind a proxy does. */
let connections = 0;

beforeAll(async () => {
  hub = net.createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => hub.listen(0, '127.0.0.1', resolve));
  platform = await openTestPlatform({ HF_ENDPOINT: `http://127.0.0.1:${(hub.address() as AddressInfo).port}` });
});

afterAll(async () => {
  await platform?.close();
  await new Promise((resolve) => hub.close(resolve));
});

const failure = (promise: Promise<unknown>) => promise.then(() => { throw new Error('expected a failure'); }, (err: unknown) => err);

describe('locateBaseModel with provider hub', () => {
  it('refuses an id that is in no store and is not owner/name without asking the hub', async () => {
    const err = await failure(locateBaseModel(platform, 'hub', 'no-such-model'));
    expect(err).toBeInstanceOf(UnprocessableEntity);
    expect((err as UnprocessableEntity).issues[0]).toMatchObject({ type: 'unknown_model', msg: expect.stringMatching(/not a hub id \(owner\/name\)/) });
    expect(connections).toBe(0);
  });

  it('an owner/name id while the hub is unreachable is a 503 naming the hub, and the hub is not asked again for it', async () => {
    const first = await failure(locateBaseModel(platform, 'hub', 'someone/some-model'));
    expect(first).toBeInstanceOf(ServiceUnavailable);
    expect((first as Error).message).toMatch(/model hub at http:\/\/127\.0\.0\.1:\d+ is unreachable.*not asked again about "someone\/some-model" for 60 s/);
    expect(connections).toBe(1);
    const again = await failure(locateBaseModel(platform, 'hub', 'someone/some-model'));
    expect(again).toBeInstanceOf(ServiceUnavailable);
    expect(connections).toBe(1);
    // another id is its own question
    await failure(locateBaseModel(platform, 'hub', 'someone/other-model'));
    expect(connections).toBe(2);
  });
});

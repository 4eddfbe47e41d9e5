import { describe, expect, it } from 'vitest';
import { inspectAddress } from '../../server/net/address-policy.js';

const refused = (address: string) => inspectAddress(address)?.restriction ?? null;

describe('address policy: IPv4', () => {
  it('refuses every IANA special-purpose range and multicast, at both edges', () => {
    const special = [
      '0.0.0.0', '0.255.255.255', '10.0.0.0', '10.255.255.255', '100.64.0.0', '100.127.255.255', '127.0.0.1', '127.255.255.255',
      '169.254.0.1', '169.254.169.254', '172.16.0.0', '172.31.255.255', '192.0.0.0', '192.0.0.255', '192.0.2.1', '192.31.196.1',
      '192.52.193.1', '192.88.99.1', '192.168.0.1', '192.168.255.255', '192.175.48.1', '198.18.0.0', '198.19.255.255',
      '198.51.100.7', '203.0.113.9', '224.0.0.1', '239.255.255.255', '240.0.0.1', '255.255.255.255',
    ];
    for (const address of special) expect(refused(address), address).not.toBeNull();
  });

  it('lets global unicast addresses through, right next to the special ranges', () => {
    const global = ['1.1.1.1', '8.8.8.8', '9.255.255.255', '11.0.0.0', '100.63.255.255', '100.128.0.0', '126.255.255.255', '128.0.0.0',
      '169.253.255.255', '172.15.255.255', '172.32.0.0', '192.0.1.0', '192.167.255.255', '198.17.255.255', '198.20.0.0', '223.255.255.255'];
    for (const address of global) expect(refused(address), address).toBeNull();
  });

  it('names the kind of address it refuses', () => {
    expect(refused('127.0.0.1')).toMatch(/loopback/);
    expect(refused('10.1.2.3')).toMatch(/private/);
    expect(refused('100.64.1.1')).toMatch(/shared/);
    expect(refused('169.254.1.1')).toMatch(/link-local/);
  });
});

describe('address policy: IPv6', () => {
  it('maps addresses that embed an IPv4 one, in any spelling, and judges the IPv4 address', () => {
    const cases: [string, string][] = [
      ['::ffff:127.0.0.1', '127.0.0.1'],
      ['::ffff:7f00:1', '127.0.0.1'],
      ['0:0:0:0:0:FFFF:7F00:0001', '127.0.0.1'],
      ['::127.0.0.1', '127.0.0.1'],
      ['::7f00:1', '127.0.0.1'],
      ['::a9fe:a9fe', '169.254.169.254'],
      ['64:ff9b::10.0.0.1', '10.0.0.1'],
      ['64:ff9b::a9fe:a9fe', '169.254.169.254'],
      ['2002:c0a8:101::1', '192.168.1.1'],
      ['2002:7f00:1:ffff:ffff:ffff:ffff:ffff', '127.0.0.1'],
    ];
    for (const [address, embedded] of cases) {
      const verdict = inspectAddress(address);
      expect(verdict?.effective, address).toBe(embedded);
      expect(verdict?.restriction, address).not.toBeNull();
    }
    for (const address of ['::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1']) {
      expect(inspectAddress(address)?.effective, address).toBe('8.8.8.8');
      expect(refused(address), address).toBeNull();
    }
  });

  it('refuses everything outside 2000::/3 and the special-purpose parts inside it', () => {
    const special = [
      '::', '::1', '::ffff:0:7f00:1', '100::1', '64:ff9b:1::1', 'fc00::1', 'fd00:ec2::254', 'fe80::1', 'fec0::1', 'ff02::1', '4000::1',
      '2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:1::1', '2001:2::5', '2001:10::1', '2001:1ff:ffff::1', '2001:db8::1',
      '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', '3fff::1', '3fff:fff:ffff::1', '1fff:ffff::1', 'fe80::1%eth0',
    ];
    for (const address of special) expect(refused(address), address).not.toBeNull();
  });

  it('lets global unicast addresses through', () => {
    const global = ['2000::1', '2001:200::1', '2001:4860:4860::8888', '2001:db9::1', '2400:cb00::1', '2606:4700:4700::1111', '2a00:1450:4001::1', '3ffe::1', '3fff:1000::1'];
    for (const address of global) expect(refused(address), address).toBeNull();
  });

  it('flags cloud metadata addresses after normalisation', () => {
    for (const address of ['169.254.169.254', '::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '64:ff9b::a9fe:a9fe', '2002:a9fe:a9fe::', 'fd00:ec2::254', 'FD00:EC2:0:0:0:0:0:254', '100.100.100.200', '::ffff:100.100.100.200']) {
      expect(inspectAddress(address)?.metadata, address).toBe(true);
    }
    expect(inspectAddress('169.254.169.253')?.metadata).toBe(false);
  });

  it('is not fooled by what is not an address', () => {
    expect(inspectAddress('example.com')).toBeNull();
    expect(inspectAddress('::ffff:1.2.3')).toBeNull();
    expect(inspectAddress('1::2::3')).toBeNull();
    expect(inspectAddress('1.2.3.256')).toBeNull();
  });
});

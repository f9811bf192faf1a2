#!/usr/bin/python3
"""Independent SigV4 check of requests recorded by tools/fault_proxy.js.

For every recorded request (one JSON object per line: method, target,
headers as [name, value] pairs, body_b64) it recomputes the Authorization
signature with botocore's S3SigV4Auth from the request as it went over the
wire, and also checks what S3 requires but botocore takes on trust:
  - the path and query are already in SigV4 canonical form (libcurl 7.88
    signs them as given, S3 canonicalizes, so they must be equal):
    RFC 3986 with uppercase hex, query sorted, "key=" for empty values;
  - host, x-amz-date and x-amz-content-sha256 (and x-amz-security-token
    when sent) are signed; every signed header was actually sent;
  - x-amz-content-sha256 is UNSIGNED-PAYLOAD or the SHA-256 of the body.

Usage: sigv4_verify.py --secret SECRET [--access-key KEY] requests.jsonl
Prints one JSON line per request ({"ok":..., "method":..., "target":...,
"problems":[...]}) and exits 0 only if every request passed (and there
was at least one).
"""
import argparse
import base64
import hashlib
import json
import sys
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def parse_authorization(value):
    algo, _, rest = value.partition(' ')
    if algo != 'AWS4-HMAC-SHA256':
        raise ValueError('algorithm %r' % algo)
    fields = {}
    for part in rest.split(','):
        k, _, v = part.strip().partition('=')
        fields[k] = v
    return fields['Credential'], fields['SignedHeaders'], fields['Signature']


def verify(rec, secret, access_key):
    problems = []
    headers = {}
    for name, value in rec['headers']:
        lname = name.lower()
        headers[lname] = headers[lname] + ',' + value if lname in headers else value
    body = base64.b64decode(rec['body_b64'])
    if 'authorization' not in headers:
        return ['no Authorization header']
    try:
        credential, signed, signature = parse_authorization(headers['authorization'])
    except (ValueError, KeyError) as e:
        return ['unparseable Authorization header: %s' % e]
    key, date, region, service, terminator = credential.split('/')
    if access_key and key != access_key:
        problems.append('access key %r, expected %r' % (key, access_key))
    if service != 's3' or terminator != 'aws4_request':
        problems.append('credential scope %r' % credential)
    signed_names = signed.split(';')
    for required in ('host', 'x-amz-date', 'x-amz-content-sha256'):
        if required not in signed_names:
            problems.append('%s is not signed' % required)
    if 'x-amz-security-token' in headers and 'x-amz-security-token' not in signed_names:
        problems.append('x-amz-security-token is sent but not signed')
    if signed_names != sorted(signed_names):
        problems.append('SignedHeaders not sorted: %s' % signed)
    missing = [n for n in signed_names if n not in headers]
    if missing:
        problems.append('signed but not sent: %s' % ','.join(missing))
        return problems
    amz_date = headers['x-amz-date']
    if amz_date[:8] != date:
        problems.append('x-amz-date %s does not match the scope date %s' % (amz_date, date))

    payload = headers['x-amz-content-sha256']
    if payload != 'UNSIGNED-PAYLOAD' and payload != hashlib.sha256(body).hexdigest():
        problems.append('x-amz-content-sha256 is neither UNSIGNED-PAYLOAD nor the body hash')

    target = rec['target']
    parts = urlsplit('http://h' + target)
    canonical_path = quote(unquote(parts.path), safe='/~')
    if parts.path != canonical_path:
        problems.append('path %r is not canonical (expected %r)' % (parts.path, canonical_path))
    auth = S3SigV4Auth(Credentials(key, secret, headers.get('x-amz-security-token')), service,
                       region)
    if parts.query:
        pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=True)
        canonical_query = auth._canonical_query_string_params(pairs)
        if parts.query != canonical_query:
            problems.append('query %r is not canonical (expected %r)' % (parts.query,
                                                                        canonical_query))

    request = AWSRequest(method=rec['method'], url='http://' + headers['host'] + target,
                         headers={n: headers[n] for n in signed_names}, data=body)
    request.context['timestamp'] = amz_date
    canonical_request = auth.canonical_request(request)
    string_to_sign = auth.string_to_sign(request, canonical_request)
    expected = auth.signature(string_to_sign, request)
    if expected != signature:
        problems.append('signature mismatch: botocore computes %s, request has %s; canonical '
                        'request was:\n%s' % (expected, signature, canonical_request))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--secret', required=True)
    ap.add_argument('--access-key')
    ap.add_argument('recording')
    args = ap.parse_args()
    total = failed = 0
    with open(args.recording) as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            problems = verify(rec, args.secret, args.access_key)
            total += 1
            failed += bool(problems)
            print(json.dumps({'ok': not problems, 'method': rec['method'],
                              'target': rec['target'], 'problems': problems}))
    print(json.dumps({'verified': total, 'failed': failed}))
    return 0 if total > 0 and failed == 0 else 1


if __name__ == '__main__':
    sys.exit(main())

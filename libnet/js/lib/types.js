'use strict'
// Option checks and the augData envelope, with lib-net 1.6.1's rules and
// messages (src/types.ts NewAugData, validateSnOpts).

const NewAugData = (data, UUID, port, address, timeoutInMs, msgDir) => ({
  data,
  UUID,
  PORT: port,
  ADDRESS: address,
  sendTime: Date.now(),
  receivedTime: 0,
  replyTime: 0,
  replyReceivedTime: 0,
  timeout: timeoutInMs,
  msgDir,
})

const validateSnOpts = (opts) => {
  if (!opts) throw new Error('snq: must supply options')
  const checks = [
    [!opts.port || typeof opts.port !== 'number', 'snq: must supply port'],
    [!opts.crypto || !opts.crypto.hashKey || typeof opts.crypto.hashKey !== 'string', 'snq: must supply hashKey'],
    [opts.senderOpts && opts.senderOpts.useLruCache && !opts.senderOpts.lruSize, 'snq: must supply lruSize when using lruCache'],
    [
      opts.payloadOpts && opts.payloadOpts.payloadSizeLimitInBytes && typeof opts.payloadOpts.payloadSizeLimitInBytes !== 'number',
      'snq: payloadSizeLimitInBytes must be a number',
    ],
    [
      opts.payloadOpts && opts.payloadOpts.headerSizeLimitInBytes && typeof opts.payloadOpts.headerSizeLimitInBytes !== 'number',
      'snq: headerSizeLimitInBytes must be a number',
    ],
    [opts.rawOpts !== undefined && (typeof opts.rawOpts !== 'object' || opts.rawOpts === null), 'snq: rawOpts must be an object'],
  ]
  for (const [bad, message] of checks) if (bad) throw new Error(message)
}

module.exports = { NewAugData, validateSnOpts }

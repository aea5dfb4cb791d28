'use strict'
// getSenderAddress against @ethereumjs/tx: transactions signed here by
// @ethereumjs/tx, each recovered by the core and by @ethereumjs/tx.
const { LegacyTransaction, AccessListEIP2930Transaction, FeeMarketEIP1559Transaction } = require('@ethereumjs/tx')
const { bytesToHex, hexToBytes, bytesToBigInt, bigIntToUnpaddedBytes } = require('@ethereumjs/util')
const { RLP } = require('@ethereumjs/rlp')
const { Common } = require('@ethereumjs/common')
const { load, main } = require('./lib')

main(async ({ impl }) => {
  const { getSenderAddress } = load(impl)
  const key = hexToBytes('0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318')
  const common = Common.custom({ chainId: 8082 })
  const zero = '0x0000000000000000000000000000000000000000'
  const to = '0x6b92bdc43874fc19ead67ac7e37f2e126667b307'
  const cases = {
    legacyEIP155: LegacyTransaction.fromTxData({ nonce: 1, gasPrice: 10, gasLimit: 21000, to, value: 5 }, { common }).sign(key),
    legacyUnprotected: LegacyTransaction.fromTxData({ nonce: 2, gasPrice: 10, gasLimit: 21000, to, value: 5 }).sign(key),
    creation: LegacyTransaction.fromTxData({ nonce: 3, gasPrice: 10, gasLimit: 21000 + 16 * 3, data: '0x600a60' }, { common }).sign(key),
    toZeroUnderGas: LegacyTransaction.fromTxData({ nonce: 4, gasPrice: 10, gasLimit: 21000, to: zero }, { common }).sign(key),
    eip2930: AccessListEIP2930Transaction.fromTxData(
      { nonce: 5, gasPrice: 10, gasLimit: 30000, to, accessList: [{ address: to, storageKeys: ['0x' + '00'.repeat(31) + '01'] }] },
      { common }
    ).sign(key),
    eip1559: FeeMarketEIP1559Transaction.fromTxData({ nonce: 6, maxFeePerGas: 10, maxPriorityFeePerGas: 1, gasLimit: 20999, to, data: '0x00' }, { common }).sign(key),
  }
  const out = {}
  for (const [name, tx] of Object.entries(cases)) {
    const raw = bytesToHex(tx.serialize())
    out[name] = { expected: tx.getSenderAddress().toString(), got: getSenderAddress(raw) }
  }
  // The low-s rule: s' = n - s with the other parity recovers the same key
  // without it, and lib-net refuses it.
  const n = BigInt('0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141')
  // @ethereumjs/tx will not build such a transaction: the fields are
  // replaced in its RLP.
  const fields = RLP.decode(cases.eip1559.serialize().slice(1))
  fields[9] = fields[9].length ? new Uint8Array() : Uint8Array.of(1) // the other y parity
  fields[11] = bigIntToUnpaddedBytes(n - bytesToBigInt(fields[11]))
  const high = Uint8Array.of(2, ...RLP.encode(fields))
  try {
    out.highS = { got: getSenderAddress(bytesToHex(high)) }
  } catch (e) {
    out.highS = { error: e.message }
  }
  return out
})

// Types of lib-net 1.6.1's API (src/types.ts), which shardus-core imports
// from build/src/types, plus the raw lane's.
export type Address = string
export type Port = number

export interface AugmentedData {
  data: unknown
  UUID: string
  PORT: Port
  ADDRESS?: Address
  sendTime: number
  receivedTime: number
  replyTime: number
  replyReceivedTime: number
  timeout: number
  msgDir: 'ask' | 'tell' | 'resp'
}

export declare const NewAugData: (
  data: unknown,
  UUID: string,
  port: number,
  address: string,
  timeoutInMs: number,
  msgDir: 'ask' | 'tell' | 'resp'
) => AugmentedData

export type RawOpts = {
  /** every peer takes the raw lane (a network of courier cores only) */
  all?: boolean
  /** "ip:port" of peers known to take the raw lane */
  peers?: string[]
  /** drop duplicate raw messages (same route and payload) before JavaScript */
  dedup?: boolean
  /** payload hashes remembered for dedup; default 16384 */
  dedupSize?: number
  /** the sender id of raw-lane headers (at most 255 bytes) */
  senderId?: string
  /** messages one peer may have queued beyond 256; default 65536 */
  queueLength?: number
  /** messages handed to JavaScript and not yet delivered; default 8192 */
  receiveQueue?: number
}

export type SnOpts = {
  port: number
  address?: string
  senderOpts?: { useLruCache?: boolean; lruSize: number }
  headerOpts?: { sendHeaderVersion: number }
  customStringifier?: (val: any) => string
  customJsonParser?: (value: string) => any
  crypto: { hashKey: string; signingSecretKeyHex: string }
  payloadOpts?: { payloadSizeLimitInBytes?: number; headerSizeLimitInBytes?: number }
  rawOpts?: RawOpts
}

export declare const validateSnOpts: (opts: SnOpts) => void

export interface RemoteSender {
  address: string | undefined
  port: number | undefined
}

export type ResponseCallback = (data?: unknown, header?: AppHeader, sign?: Sign) => void
export type ListenerResponder = (data?: unknown, header?: AppHeader) => void
export type TimeoutCallback = () => void
export type ListenCallback = (data: unknown, remote: RemoteSender, respond: ResponseCallback) => void

export interface AppHeader {
  sender_id?: string
  tracker_id?: string
  verification_data?: string
  compression?: string
}

export interface CombinedHeader {
  uuid: string
  sender_id?: string
  tracker_id?: string
  verification_data?: string
  compression?: string
}

export type CompressionTechnique = 'Gzip' | 'Brotli'

export interface Sign {
  owner: string
  sig: string
}

export type GetSenderAddressResult = { address: string; isValid: boolean; gasValid: boolean }

export interface RawHeader {
  route: string
  sender_id: string
  dir: 'tell' | 'ask'
  remote: { address: string; port: number }
}

export interface RawSendOpts {
  route?: string
  compression?: 'None' | 'Gzip' | 'Brotli' | 'Zstd'
  /** askRaw: ms, default 5000 */
  timeout?: number
}

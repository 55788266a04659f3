import type { Locale } from '../i18n/locales.js';
/** Field types of SPEC.md's Field resource, and FILE: the signer uploads a PDF, PNG or JPEG (issue 37; nothing is stamped but a note). */
export const FIELD_TYPES = ['SIGNATURE', 'INITIALS', 'NAME', 'EMAIL', 'DATE', 'TEXT', 'NUMBER', 'CHECKBOX', 'RADIO', 'DROPDOWN', 'FILE'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

export type PageBox = {
  /** Page size in points as displayed, i.e. after the page's /Rotate is applied. */
  width: number;
  height: number;
  rotation: 0 | 90 | 180 | 270;
};

export type PdfInfo = { pageCount: number; pages: PageBox[] };

/**
 * Where a field sits: 1-based page, and percentages (0..100) of the page as displayed, origin at the
 * top-left corner (SPEC.md: "position 0,0 is the top-left corner").
 */
export type Placement = { page: number; x: number; y: number; width: number; height: number };

/** A `{{<type>, r<n>}}` marker found in the PDF text. */
export type Marker = Placement & { type: FieldType; recipientIndex: number; text: string };

/** A marker-like text that does not name a known type, or has a malformed recipient. */
export type BadMarker = { page: number; text: string; reason: string };

/** An uploaded PDF part: the file a multipart upload was streamed to, or the bytes themselves (MCP's base64). */
export type UploadPart = string | Uint8Array;

/**
 * Where a document's bytes are: a file (the first upload, holding the parts joined when there were
 * several; removed when the request ends), or memory (bytes uploaded as such, a stored template read back).
 */
export type DocumentContent = { file: string; size: number } | { bytes: Uint8Array };

/** The envelope's one document, the uploaded parts joined in order, with what the sandbox read from it. */
export type PreparedDocument = DocumentContent & {
  info: PdfInfo;
  markers: Marker[];
  badMarkers: BadMarker[];
  /** Hex SHA-256 of the document, shown on the audit certificate. */
  sha256: string;
};

export type StampField = Placement & {
  type: FieldType;
  /** Text to draw (NAME, EMAIL, DATE, TEXT, NUMBER, RADIO, DROPDOWN, typed SIGNATURE/INITIALS); "true"/"false" for CHECKBOX. */
  value: string | null;
  /** A PNG or JPEG image for drawn or uploaded SIGNATURE/INITIALS. */
  image?: Uint8Array;
};

/** One thing a recipient did, for the certificate: when (ISO), and from where. */
export type CertificateAction = { event: string; at: string; ip: string | null; userAgent: string | null };

export type CertificateData = {
  envelopeId: string;
  title: string | null;
  documentSha256: string;
  completedAt: string;
  /** The sending account's display name as recorded at create (what its recipients were shown). */
  senderName?: string | null;
  /** The seal's PAdES level (B-B, B-T, B-LT, B-LTA): printed as given. */
  sealLevel?: string;
  /** The timestamp authority's name (its URL's host); null or unset when the seal carries no timestamp. */
  tsaName?: string | null;
  /** What the recipients agreed to before acting (electronic records and signatures), and its SHA-256. */
  /** builtIn: Signet's own text, which each recipient was shown in their language (their line gives its hash). */
  consent?: { text: string; sha256: string; builtIn?: boolean };
  recipients: {
    name: string;
    email: string;
    role: string;
    status: string;
    ip: string | null;
    userAgent: string | null;
    viewedAt: string | null;
    signedAt: string | null;
    /** Set for a recipient who had to confirm an emailed code before seeing the document. */
    emailVerification?: { verifiedAt: string | null };
    /** The IANA time zone the recipient's browser reported: their times are printed in it too. */
    timeZone?: string | null;
    /** When they agreed to electronic records and signatures, and the SHA-256 of the text they were shown. */
    consent?: { at: string; textSha256: string | null } | null;
    /** What they did, in order (viewed, verified, consented, signed, approved, declined), each with IP and user agent. */
    actions?: CertificateAction[];
  }[];
  events: { at: string; event: string; recipientEmail: string | null; ip: string | null }[];
  /** Each time a recipient's place passed to another person: reassigned by the sender or delegated by the recipient. */
  handovers?: { at: string; by: 'sender' | 'recipient'; from: { name: string; email: string }; to: { name: string; email: string }; reason: string | null }[];
  /** A test-mode send (free, outbox mail only): the certificate and the signature's reason say TEST. */
  test?: boolean;
  /** Files the signers attached (FILE fields), each with its SHA-256; printed under their own heading. */
  attachments?: CertificateAttachment[];
  /** `$PUBLIC_URL/verify-document`, printed on the certificate: where anyone can check the sealed file. */
  verificationUrl?: string;
  /** The certificate's one language: the account's default when the envelope was created; English when unset. */
  locale?: Locale;
};

/** A signer's attachment as the certificate lists it. */
export type CertificateAttachment = { name: string; contentType: string; size: number; sha256: string; recipientEmail: string; uploadedAt: string };
